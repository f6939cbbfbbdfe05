"""The agent: a language model writes the kernels through tool calls, kforge's environment judges them.

`kforge agent PROBLEM.py --model NAME --base-url URL` (python -m kforge.agent) runs a multi-turn loop over an
OpenAI-compatible chat-completions server (chat.py): the model reads the problem, writes a candidate (a ModelNew or
raw CUDA), compiles, verifies and profiles it (workbench.py: the same sandboxed judge as `kforge evaluate`), and the
loop (loop.py) stores every message, tool call and verdict as a trajectory in the measurement database
(trajectory.py), exportable as JSONL training data with rewards."""
