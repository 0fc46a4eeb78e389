"""`ExternalAgent`: a `SkillAgent` whose task is solved by the user's own agent process.

Routing, credit and the `Rollout` are the built-in agent's; only solving differs (see the
package docstring). The rollout's `response` is the trajectory reflection reads: the answer
(stdout, or the answer file), then the tail of stderr and how the process ended; the grade is of
the answer alone. A process that fails or times out is a rollout with `error` set, never a crash.

Results are cached in the agent LM's response cache (when it has one and `agent.cache` is on),
keyed by the command's identity (the command resolved, digests of the files it names: see
`AgentCommand.identity`), the skill files written, the task and the sample index: a resumed or
repeated step runs the agent again only for tasks it had not finished, and an edited agent is
run again. The agent sees only the environment `moscopt.agent.external.environment` allows; its
answer file is read at most `ANSWER_BYTES` from its end.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from moscopt.agent.external.command import AgentCommand, task_file
from moscopt.agent.external.environment import agent_environment
from moscopt.agent.external.process import ProcessResult, run_process
from moscopt.agent.external.workspace import materialise, workdir
from moscopt.agent.harness import Rollout
from moscopt.agent.skill_agent import SkillAgent
from moscopt.core import jsonio
from moscopt.lm.redact import redact
from moscopt.lm.wire import model_text
from moscopt.run.fsio import canonical_json

if TYPE_CHECKING:
    from moscopt.benchmarks import Benchmark, Task
    from moscopt.config import Config
    from moscopt.core.skills import Pool, Skill
    from moscopt.lm.base import LM, Message
    from moscopt.routing.gate import Router

CACHE_FORMAT = 2  # 2: the command's identity resolves {cwd} and digests the agent's files
ANSWER_BYTES = 64 * 1024  # of the answer file, from its end
STDERR_CHARS = 1500  # of stderr in the trajectory
ANSWER_CHARS = 2500  # of the answer in the trajectory (the grade sees all of it)
ERROR_CHARS = 300


class ExternalAgent(SkillAgent):
    """Routes with the pool's router, solves with `command`, grades with the benchmark."""

    def __init__(
        self,
        lm: LM,
        benchmark: Benchmark,
        pool: Pool | None,
        router: Router | None,
        command: AgentCommand,
        *,
        progressive_disclosure: bool = True,
    ) -> None:
        super().__init__(lm, benchmark, pool, router, progressive_disclosure=progressive_disclosure)
        self.command = command
        self._identity: dict[str, object] | None = None  # computed once per agent
        self._slots: tuple[asyncio.AbstractEventLoop, asyncio.Semaphore] | None = None

    @classmethod
    def build(
        cls, lm: LM, benchmark: Benchmark, pool: Pool | None, router: Router, config: Config
    ) -> ExternalAgent:
        return cls(
            lm,
            benchmark,
            pool,
            router,
            AgentCommand.from_config(config.agent),
            progressive_disclosure=config.agent.progressive_disclosure,
        )

    async def run(self, task: Task, *, sample: int = 0) -> Rollout:
        activation = await self.router.select(task.prompt, sample=sample)
        usage = activation.usage
        skills = self._skills(activation.skills)
        if not self.progressive_disclosure and self.pool is not None:
            skills = list(self.pool)  # the ablation: every skill in the agent's folder
        result = await self.solve(task, skills, sample=sample)
        answer = _answer_text(result)
        grade = await self.benchmark.agrade(task, answer)
        error = result.get("error") or grade.error
        messages: list[Message] = [
            {"role": "user", "content": task.prompt},
            {"role": "assistant", "content": trajectory(result)},
        ]
        return Rollout(
            task_id=task.id,
            skills=activation.skills,
            activation=activation.source,
            messages=messages,
            response=trajectory(result),
            answer=grade.answer,
            reward=grade.reward,
            detail=grade.detail,
            error=error,
            gate_error=activation.error,
            prompt_tokens=usage.usage.prompt_tokens if usage is not None else 0,
            completion_tokens=usage.usage.completion_tokens if usage is not None else 0,
            cost=usage.cost if usage is not None else 0.0,
            calls=0 if usage is None or usage.cache_hit else 1,
            sample=sample,
            extra={"external": {k: result.get(k) for k in ("returncode", "timed_out", "elapsed")}},
        )

    async def solve(self, task: Task, skills: Sequence[Skill], *, sample: int) -> dict[str, Any]:
        """The agent's result for `task` with `skills` in its folder (cached, see above)."""
        key = self._key(task, skills, sample)
        cache = getattr(self.lm, "cache", None) if self.command.cache else None
        if cache is not None:
            hit = cache.get(key)
            if hit is not None:
                try:
                    cached: dict[str, Any] = jsonio.loads(hit.text)
                    return cached
                except ValueError:
                    pass  # unreadable entry: run again and overwrite it
        async with self._semaphore():
            result = await self._run_once(task, skills, sample)
        if cache is not None and result.get("returncode") == 0:  # never replay a failure
            from moscopt.lm.base import Completion

            cache.put(key, Completion(text=json.dumps(result), model="external-agent"))
        return result

    def _semaphore(self) -> asyncio.Semaphore:
        """`agent.parallel` processes at once (one semaphore per event loop)."""
        loop = asyncio.get_running_loop()
        if self._slots is None or self._slots[0] is not loop:
            self._slots = (loop, asyncio.Semaphore(self.command.parallel))
        return self._slots[1]

    def _key(self, task: Task, skills: Sequence[Skill], sample: int) -> str:
        data = {
            "v": CACHE_FORMAT,
            "kind": "external-agent",
            "command": self._command_identity(),
            "skills": [_skill_identity(s) for s in skills],
            "task": task.prompt,
            "sample": sample,
        }
        return hashlib.sha256(canonical_json(data).encode("utf-8", "surrogatepass")).hexdigest()

    def _command_identity(self) -> dict[str, object]:
        if self._identity is None:
            self._identity = self.command.identity()
        return self._identity

    async def _run_once(self, task: Task, skills: Sequence[Skill], sample: int) -> dict[str, Any]:
        cmd = self.command
        with workdir() as root:
            folders = materialise(root, skills, cmd.skills_paths)
            answer_path = root / cmd.answer_file if cmd.answer_file else None
            if answer_path is not None:
                answer_path.parent.mkdir(parents=True, exist_ok=True)
            tfile = task_file(root)
            tfile.write_text(task.prompt, encoding="utf-8")
            values = {
                "task": task.prompt,
                "task_file": str(tfile),
                "workdir": str(root),
                "skills_dir": str(folders[0]) if folders else "",
                "answer_file": str(answer_path) if answer_path is not None else "",
            }
            env = {
                **agent_environment(cmd.env),
                "MOSCOPT_TASK_ID": task.id,
                "MOSCOPT_SAMPLE": str(sample),
                "MOSCOPT_WORKDIR": str(root),
                "MOSCOPT_SKILLS_DIR": values["skills_dir"],
                "MOSCOPT_TASK_FILE": str(tfile),
                "MOSCOPT_ANSWER_FILE": values["answer_file"],
            }
            stdin = None if cmd.task_as_argument else task.prompt
            try:
                proc = await run_process(
                    cmd.render(values), cwd=root, stdin=stdin, timeout=cmd.timeout, env=env
                )
            except OSError as e:  # the program vanished or cannot be executed
                return {"spawn_error": True, "error": f"could not start the agent: {e}"[:300]}
            answer = None
            if answer_path is not None and answer_path.is_file():
                answer = read_tail(answer_path, ANSWER_BYTES)
        return _result(proc, answer, cmd.answer_file)


def read_tail(path: Path, limit: int) -> str | None:
    """The last `limit` bytes of `path` as text (never more read, however large the file);
    None if it cannot be read."""
    try:
        with path.open("rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - limit))
            data = f.read(limit)
    except OSError:
        return None
    return data.decode("utf-8", errors="replace")


def _result(proc: ProcessResult, answer: str | None, answer_file: str | None) -> dict[str, Any]:
    error = None
    if proc.timed_out:
        error = f"the agent timed out after {proc.elapsed:.0f} s"
    elif proc.returncode != 0:
        last = next((ln for ln in reversed(proc.stderr.splitlines()) if ln.strip()), "")
        error = f"the agent exited with status {proc.returncode}" + (f": {last}" if last else "")
    if answer_file and answer is None:
        error = error or f"the agent wrote no answer file ({answer_file})"
        answer = ""  # never graded on stdout when the answer is a file
    return {
        "stdout": _clean(proc.stdout),
        "stderr": _clean(proc.stderr),
        "answer": _clean(answer) if answer is not None else None,
        "returncode": proc.returncode,
        "timed_out": proc.timed_out,
        "elapsed": round(proc.elapsed, 3),
        "truncated": proc.truncated,
        "error": _clean(error)[:ERROR_CHARS] if error else None,
    }


def _clean(text: str) -> str:
    """The agent's text without secrets or terminal control sequences (see `model_text`)."""
    return model_text(redact(text))


def _answer_text(result: dict[str, Any]) -> str:
    answer = result.get("answer")
    return str(answer if answer is not None else result.get("stdout") or "")


def trajectory(result: dict[str, Any]) -> str:
    """What reflection reads of one run: the answer (its tail), stderr's tail, how it ended."""
    answer = _answer_text(result).strip()
    parts = [answer[-ANSWER_CHARS:] if answer else "(no answer)"]
    if result.get("answer") is not None and (result.get("stdout") or "").strip():
        parts.append(f"[agent stdout, last lines]\n{result['stdout'].strip()[-STDERR_CHARS:]}")
    stderr = (result.get("stderr") or "").strip()
    if stderr:
        parts.append(f"[agent stderr, last lines]\n{stderr[-STDERR_CHARS:]}")
    if result.get("error"):
        parts.append(f"[agent process] {result['error']}")
    return "\n\n".join(parts)


def _skill_identity(skill: Skill) -> object:
    """What of a skill the agent sees: its SKILL.md, and its folder's files by digest (a skill
    without files keys as it always has)."""
    if not skill.files:
        return skill.dumps()
    return [skill.dumps(), [[f.path, f.mode, f.sha256()] for f in skill.files]]
