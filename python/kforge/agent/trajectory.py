"""Trajectories of agent runs in the measurement database (SQLite, beside the search's measurements): every
message of the conversation, every tool call with its arguments, result and seconds, and the run's status and
reward; exported as JSONL training data (one run a line: messages, tool calls, reward). Nothing here holds the API
key: the client keeps it, and no message carries it."""
import json
import sqlite3
from datetime import datetime, timezone

SCHEMA = """
CREATE TABLE IF NOT EXISTS agent_runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT, problem TEXT NOT NULL, model TEXT NOT NULL, base_url TEXT NOT NULL,
  rules TEXT NOT NULL, device TEXT NOT NULL, started TEXT NOT NULL, ended TEXT, status TEXT, detail TEXT,
  tier TEXT, reward REAL, best_candidate INTEGER);
CREATE TABLE IF NOT EXISTS agent_messages (
  run INTEGER NOT NULL REFERENCES agent_runs(id), idx INTEGER NOT NULL, message TEXT NOT NULL, PRIMARY KEY (run, idx));
CREATE TABLE IF NOT EXISTS agent_tool_calls (
  run INTEGER NOT NULL REFERENCES agent_runs(id), idx INTEGER NOT NULL, turn INTEGER NOT NULL, name TEXT NOT NULL,
  arguments TEXT NOT NULL, result TEXT NOT NULL, seconds REAL NOT NULL, PRIMARY KEY (run, idx));
"""


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class TrajectoryStore:
    def __init__(self, path: str):
        self.db = sqlite3.connect(path, timeout=30)
        self.db.executescript(SCHEMA)

    def start(self, problem: str, model: str, base_url: str, rules: str, device: str) -> int:
        with self.db:
            cur = self.db.execute("INSERT INTO agent_runs (problem, model, base_url, rules, device, started) "
                                  "VALUES (?, ?, ?, ?, ?, ?)", (problem, model, base_url, rules, device, now()))
        return cur.lastrowid

    def message(self, run: int, idx: int, message: dict) -> None:
        with self.db:
            self.db.execute("INSERT INTO agent_messages VALUES (?, ?, ?)", (run, idx, json.dumps(message)))

    def tool_call(self, run: int, idx: int, turn: int, name: str, arguments, result: dict, seconds: float) -> None:
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        with self.db:
            self.db.execute("INSERT INTO agent_tool_calls VALUES (?, ?, ?, ?, ?, ?, ?)",
                            (run, idx, turn, str(name), text or "", json.dumps(result), seconds))

    def finish(self, run: int, status: str, detail: str, tier: str, reward: float, best: int | None) -> None:
        with self.db:
            self.db.execute("UPDATE agent_runs SET ended = ?, status = ?, detail = ?, tier = ?, reward = ?, "
                            "best_candidate = ? WHERE id = ?", (now(), status, detail, tier, reward, best, run))

    def runs(self) -> list[dict]:
        cols = ("id", "problem", "model", "base_url", "rules", "device", "started", "ended", "status", "detail", "tier",
                "reward", "best_candidate")
        return [dict(zip(cols, row)) for row in self.db.execute(f"SELECT {', '.join(cols)} FROM agent_runs ORDER BY id")]

    def trajectory(self, run: int) -> dict:
        """One run as training data: its record, the conversation in order, the tool calls in order."""
        record = next(r for r in self.runs() if r["id"] == run)
        messages = [json.loads(m) for (m,) in self.db.execute(
            "SELECT message FROM agent_messages WHERE run = ? ORDER BY idx", (run,))]
        calls = [{"turn": t, "name": n, "arguments": a, "result": json.loads(res), "seconds": s}
                 for t, n, a, res, s in self.db.execute(
                     "SELECT turn, name, arguments, result, seconds FROM agent_tool_calls WHERE run = ? ORDER BY idx", (run,))]
        return {**record, "messages": messages, "tool_calls": calls}

    def export_jsonl(self, out_path: str, runs: list[int] | None = None) -> int:
        """Writes one JSON line per run (all, or `runs`); returns how many."""
        ids = runs if runs is not None else [r["id"] for r in self.runs()]
        with open(out_path, "w") as f:
            for run in ids:
                f.write(json.dumps(self.trajectory(run)) + "\n")
        return len(ids)
