#!/usr/bin/env bash
# Real clients against moscopt's MCP server, plugin and Codex snippet, on this machine only.
#
#     scripts/check_agents.sh            # from the repository root, with moscopt[mcp] installed
#
# Installs three npm packages into a temporary folder (never into the project, never globally):
#   - @modelcontextprotocol/inspector: its CLI mode lists the tools of `moscopt mcp` and calls
#     `status` and a budget-less `train` (which must come back as a tool error);
#   - @openai/codex: with HOME and CODEX_HOME in a temporary folder, `moscopt install-agent
#     codex` writes the snippet and `codex mcp list` must show the moscopt server;
#   - @anthropic-ai/claude-code: `claude plugin validate` on the plugin and on the marketplace
#     (offline checks of the files; nothing here needs an account or the network beyond npm).
# Nothing is pointed at an outside address: the MCP server runs over stdio, its project is a
# fresh `moscopt init` with no model call made. Prints one line per check; exits 1 if any failed.
set -u
REPO="$(cd "$(dirname "$0")/.." && pwd)"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
export HOME="$WORK/home" CODEX_HOME="$WORK/home/.codex" npm_config_cache="$WORK/npm-cache"
mkdir -p "$HOME"
failed=0
pass() { echo "ok: $*"; }
fail() { echo "FAILED: $*"; failed=1; }
skip() { echo "not checked: $*"; }

MOSCOPT="$(command -v moscopt)" || { echo "moscopt is not on PATH"; exit 2; }
moscopt init "$WORK/project" >/dev/null || { echo "moscopt init failed"; exit 2; }

# CHECK_AGENTS_NPM: a folder to install into and reuse (default: a fresh temporary one)
NPM="${CHECK_AGENTS_NPM:-$WORK/npm}"
echo "installing the clients into $NPM ..."
if ! npm install --silent --no-fund --no-audit --prefix "$NPM" \
    @modelcontextprotocol/inspector @openai/codex @anthropic-ai/claude-code >"$WORK/npm.log" 2>&1; then
    tail -5 "$WORK/npm.log"
    echo "npm install failed"
    exit 2
fi
BIN="$NPM/node_modules/.bin"
for pkg in @modelcontextprotocol/inspector @openai/codex @anthropic-ai/claude-code; do
    echo "  $pkg $(node -p "require('$NPM/node_modules/$pkg/package.json').version")"
done

# -- the MCP Inspector's CLI mode --------------------------------------------------------------
inspect() {  # inspect ARGS...: the Inspector's CLI against `moscopt mcp` in the project
    (cd "$WORK/project" && "$BIN/mcp-inspector" --cli "$MOSCOPT" mcp "$@")
}
out="$(inspect --method tools/list 2>&1)"
missing=""
for tool in plan train status log diff eval export route; do
    grep -q "\"name\": \"$tool\"" <<<"$out" || missing="$missing $tool"
done
if [ -z "$missing" ]; then pass "inspector: tools/list names plan train status log diff eval export route"
else fail "inspector: tools/list lacks$missing: $(head -c 400 <<<"$out")"; fi

out="$(inspect --method tools/call --tool-name status --tool-arg project=true 2>&1)"
if grep -q 'seed pool\|skills_dir' <<<"$out"; then pass "inspector: tools/call status (project) answered"
else fail "inspector: tools/call status: $(head -c 400 <<<"$out")"; fi

out="$(inspect --method tools/call --tool-name train --tool-arg benchmark=offline 2>&1)"
if grep -q 'needs a budget' <<<"$out" && grep -q '"isError": true' <<<"$out"; then
    pass "inspector: a budget-less train is a tool error saying how to give a budget"
else fail "inspector: budget-less train: $(head -c 400 <<<"$out")"; fi

# -- Codex: the snippet written by install-agent -------------------------------------------------
(cd "$WORK/project" && moscopt install-agent codex >/dev/null) || fail "install-agent codex"
out="$("$BIN/codex" mcp list 2>&1)"
if grep -q 'moscopt' <<<"$out" && grep -q 'mcp' <<<"$out"; then
    pass "codex mcp list shows the server: $(grep moscopt <<<"$out" | head -1 | tr -s ' ')"
else fail "codex mcp list: $(head -c 400 <<<"$out")"; fi
out="$("$BIN/codex" mcp get moscopt 2>&1)"
if grep -q 'moscopt' <<<"$out"; then pass "codex mcp get moscopt reads the table"
else fail "codex mcp get moscopt: $(head -c 400 <<<"$out")"; fi

# -- Claude Code: the plugin and the marketplace -------------------------------------------------
if "$BIN/claude" plugin validate --help >/dev/null 2>&1; then
    for target in "$REPO/plugins/claude-code" "$REPO"; do
        out="$("$BIN/claude" plugin validate "$target" 2>&1)"
        if [ $? -eq 0 ]; then pass "claude plugin validate $(basename "$target"): $(tail -1 <<<"$out")"
        else fail "claude plugin validate $target: $(head -c 600 <<<"$out")"; fi
    done
else
    skip "this claude CLI has no 'plugin validate' ($("$BIN/claude" --version 2>&1 | head -1))"
fi
skip "a Claude Code or Codex session using the tools (both need an account)"
exit $failed
