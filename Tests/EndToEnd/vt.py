"""A small terminal emulator, to check what a user sees: text by display width, a scrollback,
autowrap on and off, the cursor moves and erases that gemvault and libedit send, and a resize
that wraps lines again to the new width (as tmux and most terminals do) or cuts them (xterm).

It records every character written past the right edge (`overflows`): wrapped there with
autowrap on, dropped with it off. Colours and modes it does not know are ignored."""
import re
import unicodedata


def char_width(ch):
    """Columns a character takes, as glibc's wcwidth counts them for gemvault."""
    code = ord(ch)
    if code < 0x20 or 0x7F <= code < 0xA0:
        return 0
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf") or code == 0x200D:
        return 0
    if 0xFE00 <= code <= 0xFE0F:
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def text_width(text):
    return sum(char_width(ch) for ch in text)


def widest_line(raw, paths=False):
    """The widest line a program wrote, its escape sequences left out: wider than the
    window, the terminal breaks it wherever the edge falls, mid-word. Lines holding a path
    (one word wider than a narrow window, cut wherever) are left out unless `paths`."""
    text = OSC.sub("", CSI.sub("", raw))
    return max(text_width(line) for line in re.split(r"\r\n|\n|\r", text) if paths or "/" not in line)


CSI = re.compile(r"\x1b\[([0-9;?<=>]*)([ -/]*)([@-~])")
OSC = re.compile(r"\x1b\][^\x07\x1b]*(\x07|\x1b\\)")


class Screen:
    def __init__(self, columns, rows, reflow=True):
        self.columns, self.rows, self.reflow = columns, rows, reflow
        self.lines = [[]]          # every row: the scrollback, then the window
        self.soft = [False]        # the row was continued by autowrap onto the next
        self.top = 0               # the window's first row
        self.row = self.column = 0
        self.pending_wrap = False
        self.autowrap = True
        self.saved = (0, 0)
        self.overflows = 0
        self.rest = ""             # an escape sequence cut between two reads

    # -- feeding ---------------------------------------------------------------------------
    def feed(self, data):
        data = self.rest + data
        self.rest = ""
        index = 0
        while index < len(data):
            ch = data[index]
            if ch == "\x1b":
                if index + 1 >= len(data):
                    self.rest = data[index:]
                    return
                follower = data[index + 1]
                if follower == "[":
                    match = CSI.match(data, index)
                    if not match:
                        if len(data) - index < 32:
                            self.rest = data[index:]
                            return
                        index += 2
                        continue
                    self.control(match.group(1), match.group(3))
                    index = match.end()
                    continue
                if follower == "]":
                    match = OSC.match(data, index)
                    if not match:
                        self.rest = data[index:]
                        return
                    index = match.end()
                    continue
                if follower == "7":
                    self.saved = (self.row - self.top, self.column)
                elif follower == "8":
                    self.row, self.column = self.top + self.saved[0], self.saved[1]
                    self.ensure_row()
                elif follower in "()" and index + 2 < len(data):
                    index += 1
                index += 2
                continue
            if ch == "\r":
                self.column = 0
                self.pending_wrap = False
            elif ch == "\n":
                self.line_feed()
            elif ch == "\b":
                self.column = max(0, self.column - 1)
                self.pending_wrap = False
            elif ch == "\t":
                self.column = min(self.columns - 1, (self.column // 8 + 1) * 8)
            elif ord(ch) >= 0x20 and ch != "\x7f":
                self.put(ch)
            index += 1

    def control(self, params, final):
        private = params.startswith("?")
        numbers = [int(p) if p.isdigit() else 0 for p in params.lstrip("?").split(";")] if params.lstrip("?") else []
        n = max(1, numbers[0]) if numbers else 1
        self.pending_wrap = False if final in "ABCDGHfJK" else self.pending_wrap
        if private and final in "hl":
            if 7 in numbers:
                self.autowrap = final == "h"
            return
        if final == "A":
            self.row = max(self.top, self.row - n)
        elif final == "B":
            self.row = min(self.top + self.rows - 1, self.row + n)
            self.ensure_row()
        elif final == "C":
            self.column = min(self.columns - 1, self.column + n)
        elif final == "D":
            self.column = max(0, self.column - n)
        elif final == "G":
            self.column = min(self.columns - 1, n - 1)
        elif final in "Hf":
            row = (numbers[0] if numbers and numbers[0] else 1) - 1
            column = (numbers[1] if len(numbers) > 1 and numbers[1] else 1) - 1
            self.row = self.top + min(row, self.rows - 1)
            self.column = min(column, self.columns - 1)
            self.ensure_row()
        elif final == "J":
            mode = numbers[0] if numbers else 0
            if mode == 0:
                del self.lines[self.row][self.column:]
                del self.lines[self.row + 1:]
                del self.soft[self.row + 1:]
                self.soft[self.row] = False
            elif mode in (2, 3):
                # 2 erases the window; 3 (xterm's) the scrollback above it as well.
                for row in range(0 if mode == 3 else self.top, len(self.lines)):
                    self.lines[row] = []
        elif final == "K":
            mode = numbers[0] if numbers else 0
            cells = self.lines[self.row]
            if mode == 0:
                del cells[self.column:]
                self.soft[self.row] = False
            elif mode == 1:
                for column in range(min(self.column + 1, len(cells))):
                    cells[column] = " "
            else:
                self.lines[self.row] = []
        elif final == "P":
            del self.lines[self.row][self.column:self.column + n]
        elif final == "@":
            cells = self.lines[self.row]
            if self.column < len(cells):
                cells[self.column:self.column] = [" "] * n
                del cells[self.columns:]
        elif final == "X":
            cells = self.lines[self.row]
            for column in range(self.column, min(len(cells), self.column + n)):
                cells[column] = " "

    def ensure_row(self):
        while len(self.lines) <= self.row:
            self.lines.append([])
            self.soft.append(False)

    def line_feed(self):
        self.pending_wrap = False
        if self.row == self.top + self.rows - 1:
            self.top += 1
        self.row += 1
        self.ensure_row()

    def put(self, ch):
        width = char_width(ch)
        if width == 0:
            return
        if self.pending_wrap or self.column + width > self.columns:
            self.overflows += 1
            if not self.autowrap:
                return
            self.soft[self.row] = True
            self.line_feed()
            self.column = 0
        cells = self.lines[self.row]
        while len(cells) < self.column + width:
            cells.append(" ")
        cells[self.column] = ch
        if width == 2:
            cells[self.column + 1] = None
        self.column += width
        if self.column >= self.columns:
            self.column = self.columns - 1
            if self.autowrap:
                self.pending_wrap = True
            else:
                self.column = self.columns

    # -- resizing --------------------------------------------------------------------------
    def resize(self, columns, rows):
        if self.reflow:
            self.rewrap(columns)
        else:
            for cells in self.lines:
                del cells[columns:]
            self.column = min(self.column, columns - 1)
        self.columns = columns
        self.rows = rows
        self.pending_wrap = False
        # The content's bottom stays at the window's bottom; the cursor stays in the window.
        self.top = max(0, min(self.row, len(self.lines) - rows))
        if self.row >= self.top + rows:
            self.top = self.row - rows + 1

    def rewrap(self, columns):
        logical, cursor = [], None
        current = []
        for index, cells in enumerate(self.lines):
            if index == self.row:
                cursor = (len(logical), len(current) + self.column)
            current += cells
            if not self.soft[index]:
                logical.append(current)
                current = []
        if current:
            logical.append(current)
        lines, soft = [], []
        new_cursor = (0, 0)
        for number, cells in enumerate(logical):
            start = len(lines)
            row = []
            positions = []
            for cell in cells:
                width = 0 if cell is None else char_width(cell)
                if cell is not None and len(row) + max(1, width) > columns:
                    lines.append(row)
                    soft.append(True)
                    row = []
                positions.append((len(lines), len(row)))
                row.append(cell)
            lines.append(row)
            soft.append(False)
            if cursor and cursor[0] == number:
                offset = cursor[1]
                if offset < len(positions):
                    new_cursor = positions[offset]
                else:
                    extra = offset - len(cells)
                    line = len(lines) - 1
                    new_cursor = (line, len(lines[line]) + extra)
                if new_cursor[1] >= columns:
                    new_cursor = (new_cursor[0], columns - 1)
        self.lines, self.soft = lines or [[]], soft or [False]
        self.row, self.column = new_cursor
        self.ensure_row()

    # -- reading ---------------------------------------------------------------------------
    @staticmethod
    def row_text(cells):
        return "".join(cell for cell in cells if cell is not None).rstrip()

    def all_lines(self):
        """Every row, scrollback and window, as text without trailing spaces."""
        return [self.row_text(cells) for cells in self.lines]

    def window(self):
        return [self.row_text(cells) for cells in self.lines[self.top:self.top + self.rows]]

    def text(self):
        return "\n".join(self.all_lines())
