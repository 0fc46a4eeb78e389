"""How a tool call runs: its arguments as the command line's options, its work off the event
loop, its errors as one-line tool errors, and the progress of a run it waits for."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, TextContent

from moscopt.errors import MoscoptError, UserError

if TYPE_CHECKING:
    from moscopt.cli.options import RunShape

# seconds between two looks at a run a call waits for
POLL = 0.5
_FLAG = re.compile(r"--([a-z][a-z0-9-]*)")


@dataclass(frozen=True)
class Args:
    """A tool call's arguments by name (None: not given)."""

    values: dict[str, Any]

    @classmethod
    def of(cls, values: dict[str, Any]) -> Args:
        return cls({k: v for k, v in values.items() if k != "ctx"})

    def get(self, name: str) -> Any:
        return self.values.get(name)

    def path(self, name: str) -> Path | None:
        value = self.values.get(name)
        return Path(value) if value else None

    def flags(self, **extra: Any) -> dict[str, Any]:
        """The options as dotted config keys, checked one by one as the command line checks
        them (`moscopt.cli.options.Shared.overrides`)."""
        from dataclasses import fields

        from moscopt.cli.options import Shared

        given = {f.name: self.values[f.name] for f in fields(Shared) if f.name in self.values}
        for name in ("data", "config"):
            if given.get(name) is not None:
                given[name] = Path(given[name])
        given["set"] = list(given.get("set") or [])
        given["no_cache"] = bool(given.get("no_cache"))
        return Shared(**given).overrides(**self.shape().config_keys(), **extra)

    def shape(self) -> RunShape:
        """The benchmark (or task file) and the run's shape, checked as `train` checks them."""
        from dataclasses import fields

        from moscopt.cli.options import RunShape

        values = {f.name: self.values.get(f.name) for f in fields(RunShape)}
        for name in ("tasks", "held_out"):
            values[name] = self.path(name)
        shape = RunShape(**values)
        shape.check_tasks()
        return shape


def message(e: BaseException) -> str:
    """The command line's one line for `e`, with its flags named as this server's arguments
    (`--max-calls` -> `max_calls`)."""
    if isinstance(e, UserError):
        text = f"moscopt: error: {e}"
    elif isinstance(e, MoscoptError):
        text = f"moscopt: {e}"
    else:  # a bug: one line here, never a traceback to the client
        text = f"moscopt: internal error: {type(e).__name__}: {e}"
    text = _FLAG.sub(lambda m: m.group(1).replace("-", "_"), text)
    return " ".join(text.split())


def tool_result(data: dict[str, Any]) -> CallToolResult:
    text = json.dumps(data, indent=2, sort_keys=True, default=str)
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=json.loads(text),
    )


def tool_error(e: BaseException) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=message(e))], is_error=True)


async def blocking(ctx: Context, work: Callable[[], Any], *, result: bool = True) -> Any:
    """Run `work` in a thread (it may load models and call them); its value as a tool result
    (`result`) or as is, an error as a tool error."""
    from moscopt.mcp.sampling import remember_client

    remember_client(ctx)
    try:
        value = await asyncio.to_thread(work)
    except Exception as e:
        return tool_error(e)
    return tool_result(value) if result else value


async def watch(ctx: Context, path: Path, seconds: float | None) -> CallToolResult:
    """Wait for the run at `path` to end (at most `seconds`; None: to its end), reporting its
    calls as progress where the client asked for it; then its status."""
    from moscopt.app.background import tracker
    from moscopt.mcp.runs import run_status

    loop = asyncio.get_running_loop()
    deadline = None if seconds is None else loop.time() + seconds
    t = tracker(path)
    last: tuple[Any, ...] | None = None
    while t is not None and not t.finished.is_set():
        if deadline is not None and loop.time() >= deadline:
            break
        e = t.snapshot()["last_event"] or {}
        now = (e.get("calls"), e.get("phase"), e.get("step"), e.get("activity"))
        if e and now != last:
            last = now
            total = e.get("planned_calls")
            await ctx.report_progress(e.get("calls", 0), total, progress_line(e))
        await asyncio.to_thread(t.finished.wait, POLL)
    if t is None:  # a run another process (a terminal) trains: from its saved state
        await _watch_disk(ctx, path, deadline)
    args = Args({"run": str(path)})
    try:
        data = await asyncio.to_thread(run_status, args, project=False)
    except Exception as e:
        return tool_error(e)
    if t is not None and t.finished.is_set():  # said however fast the run was
        calls = data.get("totals", {}).get("calls", 0)
        await ctx.report_progress(calls, None, f"finished: {calls} calls")
    return tool_result(data)


async def _watch_disk(ctx: Context, path: Path, deadline: float | None) -> None:
    """Follow a run this process does not train, by its saved state, while it is running."""
    from moscopt.run.rundir import RunDir

    loop, run, last = asyncio.get_running_loop(), RunDir(path), -1
    while deadline is None or loop.time() < deadline:
        state = await asyncio.to_thread(run.load_state)
        if await asyncio.to_thread(run.condition, state) != "running":
            return
        if state.totals.calls != last:
            last = state.totals.calls
            line = f"epoch {state.epoch + 1} step {state.step} {state.phase}: {last} calls saved"
            await ctx.report_progress(last, None, line)
        await asyncio.sleep(4 * POLL)


def progress_line(e: dict[str, Any]) -> str:
    """One progress message: `epoch 1/2 step 3 skills: validating ... | 41 calls, $0.0123`."""
    head = f"epoch {e.get('epoch', 0) + 1}/{e.get('epochs', '?')} step {e.get('step', 0)} "
    head += f"{e.get('phase', 'start')}"
    what = e.get("activity") or e.get("event") or ""
    if e.get("event") in ("edit", "evolution"):
        verdict = "accepted" if e.get("verdict") else "rejected"
        what = f"{e.get('target', 'evolution')} {verdict} ({e.get('score', 0):.3f})"
    return f"{head}: {what} | {e.get('calls', 0)} calls, ${e.get('cost', 0.0):.4f}"
