"""Issue 43, item 3: `gemvault mcp scan`, `wrap` and `unwrap` on the config files of five MCP
clients (fixtures written from each client's documented format), and a wrapped server started
by a test MCP client the way the clients start one: command, args and env from the file, over stdio."""
import json
import os
import re
import shutil
import stat
import subprocess
import sys

import pytest

from conftest import BIN, GOOD_KEY, HERE

FIXTURES = os.path.join(os.path.dirname(HERE), "ToolSecretsTests", "Fixtures")
STAND_IN = os.path.join(HERE, "mcp_stand_in.py")

# Fixture, where the client keeps it (under HOME, or XDG_CONFIG_HOME for VS Code and Zed).
LOCATIONS = {
    "claude.json": ".claude.json",
    "gemini-settings.json": ".gemini/settings.json",
    "vscode-mcp.json": ".config/Code/User/mcp.json",
    "cursor-mcp.json": ".cursor/mcp.json",
    "zed-settings.json": ".config/zed/settings.json",
}


def loads_jsonc(text):
    """JSON with comments and trailing commas, as VS Code and Zed read it."""
    out, i, in_string = [], 0, False
    while i < len(text):
        ch = text[i]
        if in_string:
            out.append(ch)
            if ch == "\\":
                out.append(text[i + 1])
                i += 1
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
            out.append(ch)
        elif text.startswith("//", i):
            i = text.find("\n", i) if text.find("\n", i) >= 0 else len(text)
            continue
        elif text.startswith("/*", i):
            i = text.index("*/", i) + 2
            continue
        else:
            out.append(ch)
        i += 1
    return json.loads(re.sub(r",(\s*[}\]])", r"\1", "".join(out)))


def servers(document):
    found = {}
    for section in ("mcpServers", "servers", "context_servers"):
        for name, entry in document.get(section, {}).items():
            found[(section, name)] = entry
    for project, body in document.get("projects", {}).items():
        for name, entry in body.get("mcpServers", {}).items():
            found[(project, name)] = entry
    return found


@pytest.fixture
def clients(env):
    env.init()
    placed = {}
    for fixture, relative in LOCATIONS.items():
        target = os.path.join(env.home, relative)
        os.makedirs(os.path.dirname(target), mode=0o700, exist_ok=True)
        shutil.copyfile(os.path.join(FIXTURES, fixture), target)
        os.chmod(target, 0o600)
        placed[fixture] = target
    env.placed = placed
    return env


def read(path):
    with open(path, "rb") as handle:
        return handle.read()


def test_scan_finds_every_clients_servers_and_secrets_masked(clients):
    env = clients
    os.chmod(env.placed["cursor-mcp.json"], 0o644)
    result = env.run("mcp", "scan", passphrase=False)
    assert result.code == 0, result
    for server in ("github", "linear", "postgres", "slack", "openai-tools", "aws-docs", "remote-tools", "anthropic-tools"):
        assert server in result.out, server
    assert "ghp_…2aQe" in result.out and "xoxb…StUv" in result.out and "sk-a…6Hj0" in result.out
    for fixture in LOCATIONS:
        for value in re.findall(r'"((?:ghp|xoxb|sk-|AKIA)[^"]+)"', open(os.path.join(FIXTURES, fixture)).read()):
            assert value not in result.out and value not in result.err
    assert "readable by other accounts" in result.err and env.placed["cursor-mcp.json"] in result.err


def test_wrap_rewrites_only_the_wrapped_entries_keeps_a_private_backup_and_unwrap_restores(clients):
    env = clients
    originals = {fixture: read(path) for fixture, path in env.placed.items()}
    result = env.run("mcp", "wrap")
    assert result.code == 0, result
    assert "left 'linear' as it is" in result.err and "left 'remote-tools' as it is" in result.err
    backups = re.findall(r"kept at (\S+\.orig)", result.err)
    assert len(backups) == 5
    for backup in backups:
        assert stat.S_IMODE(os.stat(backup).st_mode) == 0o600 and stat.S_IMODE(os.stat(os.path.dirname(backup)).st_mode) == 0o700
        assert not backup.startswith(env.home + "/.c")  # in gemvault's state folder, not beside the config
    for fixture, path in env.placed.items():
        before, after = servers(loads_jsonc(originals[fixture].decode())), servers(loads_jsonc(read(path).decode()))
        assert before.keys() == after.keys()
        changed = {key for key in before if before[key] != after[key]}
        assert changed, fixture
        for key in before:
            if key not in changed:
                continue
            new, old = after[key], before[key]
            assert os.path.basename(new["command"]) == "gemvault" and new["args"][0] == "exec"
            cut = new["args"].index("--")
            assert new["args"][cut + 1:] == [old["command"]] + old.get("args", [])
            assert new["args"][1:cut:2] == ["--secret"] * (cut // 2)
            moved = {pair.split("=")[0] for pair in new["args"][2:cut:2]}
            assert moved and set(new.get("env", {})) == set(old["env"]) - moved
            assert {k: v for k, v in new.items() if k not in ("command", "args", "env")} == {k: v for k, v in old.items() if k not in ("command", "args", "env")}
            # The plaintext is gone from the file.
            for variable in moved:
                assert old["env"][variable].encode() not in read(path), (fixture, variable)
    # Idempotent: a second wrap finds nothing and writes nothing.
    again = {fixture: read(path) for fixture, path in env.placed.items()}
    second = env.run("mcp", "wrap")
    assert second.code == 0 and "nothing to wrap" in second.err, second
    assert {fixture: read(path) for fixture, path in env.placed.items()} == again
    listed = env.run("secret", "list")
    assert "mcp.github.GITHUB_PERSONAL_ACCESS_TOKEN" in listed.out and "server 'github'" in listed.out, listed
    restored = env.run("mcp", "unwrap", passphrase=False)
    assert restored.code == 0 and "plaintext secrets again" in restored.err, restored
    assert {fixture: read(path) for fixture, path in env.placed.items()} == originals


def test_dry_run_prints_a_masked_diff_and_writes_nothing(clients):
    env = clients
    path = env.placed["gemini-settings.json"]
    before = read(path)
    result = env.run("mcp", "wrap", "--dry-run", "--config", path, passphrase=False)
    assert result.code == 0, result
    assert '+      "args": ["exec", "--secret", "SLACK_BOT_TOKEN=mcp.slack.SLACK_BOT_TOKEN", "--", "npx"' in result.out
    assert "xoxb…StUv" in result.out and "AbCdEfGhIjKl" not in result.out
    assert read(path) == before
    assert "mcp.slack" not in env.run("secret", "list").out


def test_wrap_of_an_unknown_server_is_refused_and_changes_nothing(clients):
    env = clients
    before = {fixture: read(path) for fixture, path in env.placed.items()}
    result = env.run("mcp", "wrap", "no-such-server")
    assert result.code == 64 and "no MCP server named 'no-such-server'" in result.err, result
    assert {fixture: read(path) for fixture, path in env.placed.items()} == before


def test_unwrap_refuses_a_file_edited_since_wrap(clients):
    env = clients
    path = env.placed["cursor-mcp.json"]
    assert env.run("mcp", "wrap", "--config", path).code == 0
    with open(path, "a") as handle:
        handle.write("\n")
    refused = env.run("mcp", "unwrap", "--config", path, passphrase=False)
    assert refused.code == 1 and "edited since" in refused.err, refused
    forced = env.run("mcp", "unwrap", "--config", path, "--force", passphrase=False)
    assert forced.code == 0 and read(path) == read(os.path.join(FIXTURES, "cursor-mcp.json"))


def test_a_malformed_file_is_reported_and_left_alone(clients):
    env = clients
    path = env.placed["zed-settings.json"]
    with open(path, "w") as handle:
        handle.write('{"context_servers": {"x": {"command": "a", "env": {"T": "ghp_R8x2Kq7LmN4pT9vW3yZ6bC1dF5gH0jS2aQe"}}')
    result = env.run("mcp", "wrap", "--config", path)
    assert result.code == 1 and "not JSON or JSONC" in result.err and "ghp_R8x2" not in result.err, result


def start_like_a_client(entry, environment):
    """What an MCP client does with a stdio entry: command, args, env over a minimal environment."""
    return subprocess.Popen([entry["command"]] + entry.get("args", []), env=dict(environment, **entry.get("env", {})),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def initialize(proc):
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test-client", "version": "0"}}}
    out, err = proc.communicate(json.dumps(request) + "\n", timeout=60)
    return proc.returncode, out, err


def stand_in_config(env, tmp_path):
    path = os.path.join(env.home, ".cursor", "mcp.json")
    document = {"mcpServers": {"stand-in": {"command": sys.executable, "args": [STAND_IN],
                                            "env": {"GITHUB_TOKEN": "ghp_R8x2Kq7LmN4pT9vW3yZ6bC1dF5gH0jS2aQe",
                                                    "SLACK_BOT_TOKEN": "xoxb-2048-1234567890-AbCdEfGhIjKlMnOpQrStUv", "LOG_LEVEL": "debug"}}}}
    with open(path, "w") as handle:
        json.dump(document, handle, indent=2)
    os.chmod(path, 0o600)
    assert env.run("mcp", "wrap", "stand-in", "--config", path).code == 0
    assert env.run("key", "set", input=GOOD_KEY + "\n").code == 0
    assert env.run("secret", "set", "unrelated", input="ghp_Unrelated000000000000000000000000000\n").code == 0
    return json.load(open(path))["mcpServers"]["stand-in"]


def test_a_wrapped_server_gets_exactly_its_secrets_through_the_session(clients, tmp_path):
    env = clients
    entry = stand_in_config(env, tmp_path)
    assert "ghp_" not in json.dumps(entry)
    assert env.run("unlock").code == 0
    try:
        minimal = {"HOME": env.home, "PATH": env.vars["PATH"], "XDG_RUNTIME_DIR": env.vars["XDG_RUNTIME_DIR"]}
        code, out, err = initialize(start_like_a_client(entry, minimal))
        assert code == 0, err
        answer = json.loads(out.splitlines()[0])
        assert answer["id"] == 1 and answer["result"]["serverInfo"]["name"] == "stand-in"
        received = answer["result"]["_meta"]["environment"]
        assert received["GITHUB_TOKEN"] == "ghp_R8x2Kq7LmN4pT9vW3yZ6bC1dF5gH0jS2aQe"
        assert received["SLACK_BOT_TOKEN"] == "xoxb-2048-1234567890-AbCdEfGhIjKlMnOpQrStUv" and received["LOG_LEVEL"] == "debug"
        # Nothing else from the vault: not the Gemini key, not another secret.
        dumped = json.dumps(received)
        assert GOOD_KEY not in dumped and "ghp_Unrelated" not in dumped and "GEMINI_API_KEY" not in received
        assert set(received) - set(minimal) - {"GITHUB_TOKEN", "SLACK_BOT_TOKEN", "LOG_LEVEL"} <= {"GEMVAULT_EXEC", "PWD", "LC_CTYPE"}
    finally:
        env.run("lock", passphrase=False)


def test_a_wrapped_server_started_by_an_editor_while_locked_fails_at_once(clients, tmp_path):
    env = clients
    entry = stand_in_config(env, tmp_path)
    # (The test build's KDF floor, with which the vault was made, lets the file pass its checks.)
    minimal = {"HOME": env.home, "PATH": env.vars["PATH"], "XDG_RUNTIME_DIR": env.vars["XDG_RUNTIME_DIR"], "GEMVAULT_TEST_KDF_FLOOR": "1"}
    code, out, err = initialize(start_like_a_client(entry, minimal))
    assert code == 1 and out == ""
    assert err.splitlines()[0] == "gemvault: error: the vault is locked: run 'gemvault unlock'"


def test_doctor_reports_plaintext_secrets_in_mcp_configs_and_dotenv_files_with_their_fix(clients, tmp_path):
    env = clients
    os.chmod(env.placed["gemini-settings.json"], 0o644)
    project = os.path.join(str(tmp_path), "project", "service")
    os.makedirs(project)
    with open(os.path.join(project, ".env"), "w") as handle:
        handle.write("DEBUG=1\nexport SLACK_BOT_TOKEN='xoxb-2048-1234567890-AbCdEfGhIjKlMnOpQrStUv'\n")
    result = subprocess.run([BIN, "doctor"], env=env.vars, cwd=os.path.dirname(project), capture_output=True, text=True, timeout=60)
    assert result.returncode == 1, result
    out = result.stdout
    assert "[mcp-configs] %s: GitHub token in plain text in env GITHUB_PERSONAL_ACCESS_TOKEN of MCP server 'github'" % env.placed["claude.json"] in out
    assert "fix: gemvault mcp wrap github --config %s" % env.placed["claude.json"] in out
    assert "fix: gemvault mcp wrap anthropic-tools --config %s" % env.placed["zed-settings.json"] in out
    assert "%s (gemini-cli's MCP servers) is readable by other accounts (mode 644)" % env.placed["gemini-settings.json"] in out
    assert "[dotenv-secrets] %s:2 sets SLACK_BOT_TOKEN to a Slack token in plain text" % os.path.join(project, ".env") in out
    assert "ghp_R8x2" not in out and "AbCdEfGhIjKl" not in out and "ghp_R8x2" not in result.stderr
    # Wrapped and closed, the config files give no more findings.
    assert env.run("mcp", "wrap").code == 0
    os.chmod(env.placed["gemini-settings.json"], 0o600)
    after = subprocess.run([BIN, "doctor"], env=env.vars, cwd=str(tmp_path), capture_output=True, text=True, timeout=60).stdout
    left = [line for line in after.splitlines() if line.startswith("[mcp-configs]")]
    # Only the remote servers' headers, which no wrapped command can supply, are still reported.
    assert len(left) == 2 and all("headers Authorization" in line for line in left), after


def private_config(tmp_path, name, text):
    """An MCP config file of the test's own, mode 0600, holding `text`."""
    path = os.path.join(str(tmp_path), name)
    with open(path, "w") as handle:
        handle.write(text)
    os.chmod(path, 0o600)
    return path


def test_dry_run_masks_secrets_whatever_their_json_escapes(clients, tmp_path):
    """A value spelled with `\\/` or `\\uXXXX` is masked by its place in the file, not by its text."""
    env = clients
    path = private_config(tmp_path, "escaped.json",
                          '{"mcpServers": {"l": {"command": "npx", "env": {"T": "ghp_\\u0041SCbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", '
                          '"U": "xoxb-1234\\/5678-abcdefghijklmnopqrstuv"}}}}\n')
    result = env.run("mcp", "wrap", "--dry-run", "--config", path, passphrase=False)
    assert result.code == 0, result
    for shown in ("bbbbbbbbbbbbbbbbbbbbbbbb", "abcdefghijklmnop", "5678"):
        assert shown not in result.out + result.err, result.out


def test_a_hostile_server_name_reaches_no_terminal_as_an_escape(clients, tmp_path):
    """Server names from a cloned repository's config never reach the terminal raw: not in
    scan, wrap's notes, nor later in `secret list`'s note of the secret's user."""
    env = clients
    path = private_config(tmp_path, "hostile.json",
                          '{"mcpServers": {"x\\u001b]0;owned\\u0007\\u001b[2J": {"command": "npx", '
                          '"env": {"T": "ghp_R8x2Kq7LmN4pT9vW3yZ6bC1dF5gH0jS2aQe"}}}}\n')
    for args in (("mcp", "scan", "--config", path), ("mcp", "wrap", "--dry-run", "--config", path), ("mcp", "wrap", "--config", path),
                 ("secret", "list")):
        result = env.run(*args, passphrase=args[0] == "secret" or args[1:2] == ("wrap",) and "--dry-run" not in args)
        assert result.code == 0, (args, result)
        assert "\x1b" not in result.out + result.err and "\x07" not in result.out + result.err, (args, result)
    assert "^[]0;owned^G^[[2J" in result.out, result.out


def test_wrap_leaves_a_server_whose_variable_exec_may_not_set(clients, tmp_path):
    """`MY-TOKEN` is no variable name and `LD_PRELOAD` is the loader's: a wrapped server could
    never start, so wrap says why and leaves the entry, and its plaintext, where they are."""
    env = clients
    original = ('{"mcpServers": {"dash": {"command": "npx", "env": {"MY-TOKEN": "ghp_R8x2Kq7LmN4pT9vW3yZ6bC1dF5gH0jS2aQe"}},\n'
                ' "loader": {"command": "npx", "env": {"LD_PRELOAD": "ghp_Z8x2Kq7LmN4pT9vW3yZ6bC1dF5gH0jS2aQe"}}}}\n')
    path = private_config(tmp_path, "odd.json", original)
    result = env.run("mcp", "wrap", "--config", path)
    assert result.code == 0, result
    assert "left 'dash'" in result.err and "left 'loader'" in result.err and "MY-TOKEN" in result.err, result.err
    assert read(path).decode() == original
    assert "mcp.dash" not in env.run("secret", "list").out


def test_wrap_leaves_a_server_written_twice(clients, tmp_path):
    """Two entries of one name would share one secret name, one value lost: both are left."""
    env = clients
    original = ('{"mcpServers": {"gh": {"command": "npx", "env": {"T": "ghp_R8x2Kq7LmN4pT9vW3yZ6bC1dF5gH0jS2aQe"}},\n'
                ' "gh": {"command": "npx", "env": {"T": "ghp_Z8x2Kq7LmN4pT9vW3yZ6bC1dF5gH0jS2aQe"}}}}\n')
    path = private_config(tmp_path, "twice.json", original)
    result = env.run("mcp", "wrap", "--config", path)
    assert result.code == 0, result
    assert "left 'gh'" in result.err and "written twice" in result.err, result.err
    assert read(path).decode() == original


def test_dry_run_masks_the_secrets_it_leaves_in_place_too(clients):
    """A remote server's header stays in the file; the diff's `+` lines show it masked as well."""
    env = clients
    path = env.placed["claude.json"]
    result = env.run("mcp", "wrap", "--dry-run", "--config", path, passphrase=False)
    assert result.code == 0, result
    assert "lin_api_Q2w9" not in result.out + result.err and "E8r7T6y5U4i3" not in result.out, result.out
