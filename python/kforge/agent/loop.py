"""The multi-turn loop: the model's message, its tool calls run on the workbench, their results back as `tool`
messages, until the model stops calling tools, the turns or the seconds run out, or the server fails. Every message
and call is stored as it happens, so an interrupted run still leaves its trajectory; the run ends with a status
(why it stopped), the tier and reward of its best verified candidate (-1 where none passed: the environment's
reward for a wrong kernel) and a line saying so."""
import json
import time
from dataclasses import dataclass

from kforge.agent.chat import ChatClient, ChatError
from kforge.agent.trajectory import TrajectoryStore
from kforge.agent.workbench import TOOLS, Workbench

SYSTEM = """You are a GPU kernel engineer. You are given a PyTorch reference model (class Model) and must write a
faster implementation that computes the same outputs: either a Python file defining ModelNew (same constructor
arguments and parameters as Model; custom CUDA through torch.utils.cpp_extension.load_inline), or a CUDA C++ file
exporting the kforge_forward C ABI that read_problem shows. Use the tools: read_problem, write_candidate, compile,
verify (every hidden input set; strict tier 1e-4, relaxed 1e-2) and profile (time beside eager PyTorch and
torch.compile). Fix what compile and verify report. Stop calling tools when you are done."""

FAILED_REWARD = -1.0


@dataclass
class Outcome:
    run: int
    status: str       # model_finished | turns_exhausted | budget_exhausted | server_error
    detail: str
    tier: str         # the best candidate's: strict | relaxed | none
    reward: float
    best_candidate: int | None

    def line(self) -> str:
        best = f"candidate {self.best_candidate}, {self.tier} tier" if self.best_candidate is not None else "no correct candidate"
        return f"kforge agent: run {self.run}: {self.status} ({self.detail}); {best}; reward {self.reward:.3f}"


def assistant_record(message: dict) -> dict:
    """The assistant's message as the conversation keeps it: role, text and tool calls only."""
    kept = {"role": "assistant", "content": message.get("content") or ""}
    if message.get("tool_calls"):
        kept["tool_calls"] = message["tool_calls"]
    return kept


def run_agent(problem_name: str, client: ChatClient, bench: Workbench, store: TrajectoryStore, turns: int,
              budget_s: float, base_url: str = "") -> Outcome:
    run = store.start(problem_name, client.model, base_url or client.url, bench.rules, bench.device)
    messages = [{"role": "system", "content": SYSTEM},
                {"role": "user", "content": f"Problem: {problem_name}. Start with read_problem."}]
    for i, m in enumerate(messages):
        store.message(run, i, m)
    t0, calls = time.monotonic(), 0
    status, detail = "turns_exhausted", f"{turns} turns"
    for turn in range(turns):
        if time.monotonic() - t0 > budget_s:
            status, detail = "budget_exhausted", f"{budget_s:.0f} s spent"
            break
        try:
            reply = client.complete(messages, TOOLS)
        except ChatError as e:
            status, detail = "server_error", str(e)
            break
        if not isinstance(reply, dict):
            status, detail = "server_error", "the server's message is not a JSON object"
            break
        messages.append(assistant_record(reply))
        store.message(run, len(messages) - 1, messages[-1])
        tool_calls = reply.get("tool_calls") or []
        if not tool_calls:
            status, detail = "model_finished", f"after {turn + 1} turns"
            break
        for call in tool_calls:
            fn = call.get("function") if isinstance(call, dict) else None
            name, args = (fn.get("name", ""), fn.get("arguments", "")) if isinstance(fn, dict) else ("", "")
            started = time.monotonic()
            result = bench.call(name, args) if name else {"error": "a tool call without a function name"}
            store.tool_call(run, calls, turn, name, args, result, time.monotonic() - started)
            calls += 1
            messages.append({"role": "tool", "tool_call_id": call.get("id", "") if isinstance(call, dict) else "",
                             "content": json.dumps(result)})
            store.message(run, len(messages) - 1, messages[-1])
    best = bench.best()
    tier = best["result"].get("tier", "relaxed") if best else "none"
    reward = float(best["result"].get("reward", 0.0)) if best else FAILED_REWARD
    outcome = Outcome(run, status, detail, tier, reward, best["id"] if best else None)
    store.finish(run, status, detail, tier, reward, outcome.best_candidate)
    return outcome
