"""Files attached to a prompt (`ask -a`, `chat -a`, `/attach`): what reaches Gemini, what is
refused, what the history keeps."""
import base64
import glob
import hashlib
import json
import os
import socket
import subprocess

import pytest

from conftest import BIN, GOOD_KEY
from ptyrun import PtySession

# The first bytes of each kind Gemini reads, padded to a small file; the names lie on purpose.
IMAGES = {
    "photo.dat": (b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(range(200)), "image/png"),
    "picture.png": (b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + bytes(range(256)) * 3, "image/jpeg"),
    "anim.txt": (b"GIF89a\x01\x00\x01\x00" + bytes(64), "image/gif"),
    "still.webp": (b"RIFF\x24\x00\x00\x00WEBPVP8 " + bytes(40), "image/webp"),
    "phone.jpg": (b"\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic" + bytes(40), "image/heic"),
    "burst.bin": (b"\x00\x00\x00\x18ftypmif1\x00\x00\x00\x00mif1heic" + bytes(40), "image/heif"),
    "paper": (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n" + bytes(range(30)), "application/pdf"),
}


def write(env, name, data):
    path = os.path.join(env.root, name)
    with open(path, "wb") as handle:
        handle.write(data)
    return path


def last_user_parts(server):
    body = json.loads(server.requests()[-1]["body"])
    return body["contents"][-1]["parts"], body


def test_images_and_pdfs_reach_gemini_as_inline_data_typed_by_their_bytes(api):
    for name, (data, mime) in IMAGES.items():
        api.server.clear()
        path = write(api, name, data)
        result = api.run("ask", "--model", "echo", "-a", path, "what is this?", passphrase=False)
        assert result.code == 0, (name, result)
        assert "inline=%s:%d" % (mime, len(data)) in result.out, (name, result.out)
        parts, _ = last_user_parts(api.server)
        assert parts[0] == {"text": "what is this?"}
        assert parts[1] == {"inlineData": {"mimeType": mime, "data": base64.b64encode(data).decode()}}, name


def test_a_text_file_goes_inline_in_a_fence_headed_by_its_name(api):
    text = "notes with a fence inside:\n```\ncode\n```\nand ```` four too\n"
    path = write(api, "notes.md", text.encode())
    other = write(api, "plain.txt", "no newline at the end".encode())
    result = api.run("ask", "--model", "echo", "--attach", path, "-a", other, "summarise", passphrase=False)
    assert result.code == 0, result
    parts, _ = last_user_parts(api.server)
    assert parts == [{"text": "summarise"},
                     {"text": "File: notes.md\n`````\n" + text + "`````"},
                     {"text": "File: plain.txt\n```\nno newline at the end\n```"}]


def test_a_file_alone_is_a_prompt(api):
    path = write(api, "photo.png", IMAGES["photo.dat"][0])
    result = api.run("ask", "--model", "echo", "-a", path, passphrase=False)
    assert result.code == 0 and "inline=image/png" in result.out, result
    parts, _ = last_user_parts(api.server)
    assert [list(p) for p in parts] == [["inlineData"]]


def test_what_is_not_a_readable_regular_file_of_a_sane_size_is_refused_before_anything_is_sent(api, tmp_path):
    fifo = os.path.join(api.root, "pipe")
    os.mkfifo(fifo)
    folder = os.path.join(api.root, "folder")
    os.mkdir(folder)
    sock_path = os.path.join(api.root, "sock")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(sock_path)
    big = os.path.join(api.root, "big.txt")
    with open(big, "wb") as handle:
        handle.truncate(10 * 1024 * 1024 + 1)
    half = write(api, "half.txt", b"a" * (8 * 1024 * 1024))
    other_half = write(api, "other-half.txt", b"b" * (8 * 1024 * 1024))
    binary = write(api, "blob.bin", bytes(range(256)) * 4)
    cases = [
        ([fifo], "it is a FIFO (named pipe), not a regular file"),
        (["/dev/zero"], "it is a device, not a regular file"),
        ([folder], "it is a directory, not a regular file"),
        ([sock_path], "it is a socket, not a regular file"),
        ([big], "it has 10485761 bytes, more than the 10 MiB a file may have"),
        ([half, other_half], "more than the 14 MiB one message may carry"),
        ([binary], "neither UTF-8 text nor an image"),
        ([os.path.join(api.root, "missing.txt")], "no such file"),
    ]
    try:
        for paths, message in cases:
            api.server.clear()
            args = [word for path in paths for word in ("-a", path)]
            result = api.run("ask", "--model", "echo", *args, "look", passphrase=False, timeout=20)
            assert result.code == 1 and message in result.err and result.out == "", (paths, result)
            assert api.server.requests() == [], paths
    finally:
        listener.close()


def test_a_key_in_an_attached_text_file_is_refused_without_a_terminal(api):
    path = write(api, "config.env", ("endpoint=x\nGEMINI_API_KEY=%s\n" % GOOD_KEY.replace("D3", "Q7")).encode())
    refused = api.run("ask", "--model", "echo", "-a", path, "what is wrong here?", passphrase=False)
    assert refused.code == 1 and "attached file config.env contains what looks like a Google auth key" in refused.err, refused
    assert GOOD_KEY.replace("D3", "Q7") not in refused.err and api.server.requests() == []
    chat = api.run("chat", "--model", "echo", "-a", path, input="hi\n", passphrase=False)
    assert chat.code == 1 and "attached file config.env contains" in chat.err, chat
    assert api.server.requests() == []
    allowed = api.run("ask", "--model", "echo", "-a", path, "--allow-secrets", "what is wrong here?", passphrase=False)
    assert allowed.code == 0 and len(api.server.requests()) == 1, allowed


def history_files(env):
    return glob.glob(os.path.join(env.vars["XDG_STATE_HOME"], "gemvault", "history", "*", "*"))


def exported(env, conversation_id):
    result = env.run("history", "export", conversation_id, "--format", "json")
    assert result.code == 0, result
    return json.loads(result.out)


def conversation_ids(env):
    return [c["id"] for c in json.loads(env.run("history", "list", "--json").out)["conversations"]]


def test_history_keeps_name_size_and_digest_and_the_content_only_when_asked(api):
    api.init()
    image = IMAGES["picture.png"][0]
    image_path = write(api, "picture.png", image)
    text_path = write(api, "notes.txt", b"the quokka notes\n")
    assert api.run("ask", "--model", "echo", "-a", image_path, "-a", text_path, "first", passphrase=False).code == 0
    [first] = conversation_ids(api)
    turn = exported(api, first)["turns"][0]
    assert turn["attachments"] == [
        {"name": "picture.png", "size": len(image), "sha256": hashlib.sha256(image).hexdigest(), "mimeType": "image/jpeg", "text": None, "data": None},
        {"name": "notes.txt", "size": 17, "sha256": hashlib.sha256(b"the quokka notes\n").hexdigest(), "mimeType": "text/plain", "text": None, "data": None},
    ]
    # History search finds the file by name, never by its content.
    found = json.loads(api.run("history", "search", "notes.TXT", "--json").out)["conversations"]
    assert [m["place"] for m in found[0]["matches"]] == ["attachment"]
    assert json.loads(api.run("history", "search", "quokka", "--json").out)["conversations"] == []
    # Resumed, the model hears that the file was there, not its bytes.
    api.server.clear()
    assert api.run("chat", "--resume", first, "--model", "echo", input="and then?\n").code == 0
    parts = json.loads(api.server.requests()[-1]["body"])["contents"][0]["parts"]
    assert parts[0] == {"text": "first"} and len(parts) == 3 and not any("inlineData" in p for p in parts)
    assert "picture.png" in parts[1]["text"] and hashlib.sha256(image).hexdigest() in parts[1]["text"] and "keeps only its name" in parts[1]["text"]

    assert api.run("ask", "--model", "echo", "-a", image_path, "-a", text_path, "--keep-attachments", "second", passphrase=False).code == 0
    [second] = [c for c in conversation_ids(api) if c != first]
    kept = exported(api, second)["turns"][0]["attachments"]
    assert base64.b64decode(kept[0]["data"]) == image and kept[0]["text"] is None
    assert kept[1]["text"] == "the quokka notes\n" and kept[1]["data"] is None
    api.server.clear()
    assert api.run("chat", "--resume", second, "--model", "echo", input="again\n").code == 0
    parts = json.loads(api.server.requests()[-1]["body"])["contents"][0]["parts"]
    assert parts[1] == {"inlineData": {"mimeType": "image/jpeg", "data": base64.b64encode(image).decode()}}
    assert parts[2]["text"].startswith("File: notes.txt\n")
    # Nothing of the file is ever on disk in clear.
    for path in history_files(api):
        with open(path, "rb") as handle:
            data = handle.read()
        assert image[16:80] not in data and b"quokka" not in data and base64.b64encode(image)[:40] not in data, path


def test_attach_in_the_chat_on_a_terminal(api):
    image = IMAGES["photo.dat"][0]
    path = write(api, "photo.dat", image)
    secret = write(api, "secret.txt", ("token: %s\n" % GOOD_KEY.replace("D3", "Z9")).encode())
    s = PtySession([BIN, "chat", "--model", "echo"], api.vars)
    try:
        s.expect(r"you ›")
        s.mark()
        s.line("/attach " + path)
        s.expect(r"attached photo\.dat \(216 bytes, image/png\); it goes with your next message")
        s.mark()
        s.line("what is it?")
        s.expect(r"last=what is it\? inline=image/png:216")
        s.expect(r"you ›")
        s.mark()
        s.line("and now?")
        s.expect(r"turns=3 .*last=and now\?")
        assert "inline=" not in s.text()
        # The image stays with its turn: the second request sends it again inside the history.
        earlier = json.loads(api.server.requests()[-1]["body"])["contents"][0]["parts"]
        assert earlier[1]["inlineData"]["mimeType"] == "image/png"
        s.mark()
        s.line("/attach " + secret)
        s.expect(r"attached file secret\.txt contains what looks like a Google auth key")
        s.expect(r"Send it to Gemini anyway\? \[y/N\]")
        s.line("n")
        s.expect(r"not attached")
        s.mark()
        s.line("/attach /dev/zero")
        s.expect(r"cannot attach /dev/zero: it is a device, not a regular file")
        s.line("/attach")
        s.expect(r"no files are waiting")
        s.send("\x04")
        assert s.wait() == 0
    finally:
        s.close()


def test_the_passphrase_file_is_never_attached(api):
    copy = os.path.join(api.root, "link-to-pass")
    os.symlink(api.passfile, copy)
    for path in (api.passfile, copy):
        result = api.run("ask", "--model", "echo", "-a", path, "--allow-secrets", "what is this?")
        assert result.code == 1 and "cannot attach %s: it is the passphrase file --passphrase-file names; gemvault never sends it" % path in result.err, result
        assert api.server.requests() == []


SERVICE_ACCOUNT = """{
  "type": "service_account",
  "project_id": "demo-project",
  "private_key_id": "0123456789abcdef",
  "private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\\n-----END PRIVATE KEY-----\\n",
  "client_email": "rotator@demo-project.iam.gserviceaccount.com"
}
"""
ADC = """{
  "client_id": "764086051850-6qr4p6gpi6hn506pt8ejuq83di341hur.apps.googleusercontent.com",
  "client_secret": "d-FL95Q19q7MQmFpd7hHD0Ty",
  "refresh_token": "1//0gExampleRefreshTokenValue-abcdefghijklmnop",
  "type": "authorized_user"
}
"""


def pdf_with_text(text, compressed_too=False):
    """A small PDF whose page draws `text` from an uncompressed content stream."""
    content = ("BT /F1 12 Tf 72 712 Td (%s) Tj ET" % text).encode()
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
               b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream"]
    if compressed_too:
        import zlib
        packed = zlib.compress(b"BT (nothing here) Tj ET")
        objects.append(b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(packed) + packed + b"\nendstream")
    body = b"%PDF-1.4\n"
    for number, obj in enumerate(objects, 1):
        body += b"%d 0 obj\n" % number + obj + b"\nendobj\n"
    return body + b"trailer\n<< /Root 1 0 R >>\n%%EOF\n"


def test_credential_files_recovery_codes_and_keys_inside_pdfs_are_caught(api):
    cases = [
        (write(api, "sa.json", SERVICE_ACCOUNT.encode()), "a service account's private key"),
        (write(api, "adc.json", ADC.encode()), "an OAuth refresh token (\"refresh_token\", as in gcloud's credentials) (1//0…mnop)"),
        (write(api, "codes.txt", b"vault recovery: 7K2M-9QXD-A1B2-C3D4-E5F6-G7H8-J9K0-MNPQ\n"), "a gemvault recovery code (7K2M…MNPQ)"),
        (write(api, "report.pdf", pdf_with_text("key " + GOOD_KEY.replace("D3", "P5"), compressed_too=True)), "a Google auth key"),
    ]
    for path, found in cases:
        result = api.run("ask", "--model", "echo", "-a", path, "look", passphrase=False)
        assert result.code == 1 and "attached file %s contains what looks like %s" % (os.path.basename(path), found) in result.err, result
        assert api.server.requests() == []
    # A PDF without one goes as it is.
    clean = write(api, "clean.pdf", pdf_with_text("quarterly figures", compressed_too=True))
    assert api.run("ask", "--model", "echo", "-a", clean, "look", passphrase=False).code == 0
