/// The shell scripts that complete a program's command line by asking the program
/// (`PROGRAM __complete WORD...`, answered by `CommandTable.completions`) for candidates, one
/// a line. Two candidates ask the shell to complete by itself: `files` and `commands`.
public enum ShellCompletion {
    public static let files = "@files"
    public static let commands = "@commands"

    /// The script for `shell`, or nil for a shell it does not know.
    public static func script(_ shell: String, program: String) -> String? {
        switch shell {
        case "bash": bash(program)
        case "zsh": zsh(program)
        case "fish": fish(program)
        default: nil
        }
    }

    private static func bash(_ program: String) -> String {
        """
        # \(program) completion for bash: \(program) completion bash > ~/.local/share/bash-completion/completions/\(program)
        _\(program)() {
            local current=${COMP_WORDS[COMP_CWORD]} candidate
            local -a candidates
            COMPREPLY=()
            while IFS= read -r candidate; do candidates+=("$candidate"); done \\
                < <(command \(program) __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null)
            for candidate in "${candidates[@]}"; do
                case $candidate in
                    @files) while IFS= read -r candidate; do COMPREPLY+=("$candidate"); done < <(compgen -f -- "$current") ;;
                    @commands) while IFS= read -r candidate; do COMPREPLY+=("$candidate"); done < <(compgen -c -- "$current") ;;
                    *) printf -v candidate %q "$candidate"; COMPREPLY+=("$candidate") ;;
                esac
            done
        }
        complete -o default -o bashdefault -F _\(program) \(program)

        """
    }

    private static func zsh(_ program: String) -> String {
        """
        #compdef \(program)
        # \(program) completion for zsh: \(program) completion zsh > ~/.zfunc/_\(program) (with ~/.zfunc on $fpath)
        _\(program)() {
            local -a candidates words_before
            words_before=("${(@)words[2,CURRENT]}")
            candidates=("${(@f)$(command \(program) __complete "${(@)words_before}" 2>/dev/null)}")
            if (( ${candidates[(Ie)@files]} )); then _files; return; fi
            if (( ${candidates[(Ie)@commands]} )); then _command_names; return; fi
            candidates=(${candidates:#})
            (( ${#candidates} )) && compadd -a candidates
        }
        if [[ $zsh_eval_context[-1] == loadautofunc ]]; then _\(program) "$@"; else compdef _\(program) \(program); fi

        """
    }

    private static func fish(_ program: String) -> String {
        """
        # \(program) completion for fish: \(program) completion fish > ~/.config/fish/completions/\(program).fish
        function __\(program)_complete
            set -l words (commandline -opc)
            set -e words[1]
            set -a words (commandline -ct)
            for candidate in (command \(program) __complete $words 2>/dev/null)
                switch $candidate
                    case @files
                        __fish_complete_path (commandline -ct)
                    case @commands
                        __fish_complete_command
                    case '*'
                        echo $candidate
                end
            end
        end
        complete -c \(program) -f -a '(__\(program)_complete)'

        """
    }
}
