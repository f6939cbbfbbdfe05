"""verl's multi-turn tool on kforge's environment: the model submits a kernel (a ModelNew file or CUDA exporting
kforge_forward) as a tool call, a running `kforge serve` judges it (POST /reward: compiled and checked in its
sandbox on every hidden set, timed, paid), and the verdict goes back to the model as the tool's answer: the tier,
the reward, the compiler's or the check's message. The trajectory's reward is the best submission's.

A subclass of verl's own `verl.tools.base_tool.BaseTool` (this module imports verl: it is loaded by verl's rollout
from the tool config, python/kforge/rl/verl_tools.yaml):

    actor_rollout_ref.rollout.multi_turn.tool_config_path=python/kforge/rl/verl_tools.yaml

Each sample names its task in the dataset's `extra_info.tools_kwargs.submit_kernel.create_kwargs.task` (the task id
of POST /tasks). The service's address and token come from the tool's config (`service_url`, `timeout_s`) or, as
for verl_reward.py, from KFORGE_SERVICE_URL and KFORGE_SERVICE_TOKEN."""
import asyncio
import json
import os
import urllib.error
from typing import Any, Optional
from uuid import uuid4

from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

from kforge.rl.verl_reward import FAILED, reward_request

SCHEMA = {
    "type": "function",
    "function": {
        "name": "submit_kernel",
        "description": "Submit a kernel for the problem: a Python file defining ModelNew (same constructor and "
                       "parameters as Model, custom CUDA through torch.utils.cpp_extension.load_inline), or CUDA C++ "
                       "exporting kforge_forward. It is compiled, checked against the reference on hidden inputs "
                       "and timed; the answer gives its tier, reward and any compiler or mismatch message.",
        "parameters": {
            "type": "object",
            "properties": {
                "kind": {"type": "string", "enum": ["modelnew", "cuda"], "description": "the file's kind"},
                "source": {"type": "string", "description": "the whole file"},
            },
            "required": ["kind", "source"],
        },
    },
}
FENCE = {"modelnew": "python", "cuda": "cuda"}


class KernelTool(BaseTool):
    def __init__(self, config: dict, tool_schema: Optional[OpenAIFunctionToolSchema] = None):
        super().__init__(config, tool_schema or OpenAIFunctionToolSchema.model_validate(SCHEMA))
        self.timeout_s = float(config.get("timeout_s", os.environ.get("KFORGE_REWARD_TIMEOUT_S", 600)))
        if config.get("service_url"):
            os.environ.setdefault("KFORGE_SERVICE_URL", config["service_url"])
        self.instances: dict[str, dict] = {}

    async def create(self, instance_id: Optional[str] = None, task=None, **kwargs) -> tuple[str, ToolResponse]:
        instance_id = instance_id or str(uuid4())
        self.instances[instance_id] = {"task": task, "best": FAILED, "submissions": 0}
        return instance_id, ToolResponse()

    async def execute(self, instance_id: str, parameters: dict[str, Any], **kwargs) -> tuple[ToolResponse, float, dict]:
        """The submission's verdict as the tool's answer; its reward as the step's score (-1 for a wrong, missing
        or unjudged kernel; a malformed call is answered, not raised)."""
        state = self.instances.get(instance_id)
        if state is None or state["task"] is None:
            return ToolResponse(text="error: this tool instance has no task (create_kwargs.task)"), FAILED, {}
        kind, source = parameters.get("kind"), parameters.get("source")
        if kind not in FENCE or not isinstance(source, str) or not source.strip():
            return ToolResponse(text=f"error: kind must be one of {', '.join(FENCE)} and source the whole file"), FAILED, {}
        answer = f"```{FENCE[kind]}\n{source}\n```\n"
        try:
            reply = await asyncio.to_thread(reward_request, [answer], [state["task"]], self.timeout_s)
        except (urllib.error.URLError, OSError) as e:  # the environment's failure, not the model's: the run's error
            raise RuntimeError(f"kforge serve could not judge the submission: {e}") from e
        reward, detail = float(reply["rewards"][0]), reply["details"][0]
        state["submissions"] += 1
        state["best"] = max(state["best"], reward)
        verdict = {"tier": detail.get("tier", "failed"), "reward": reward}
        for key in ("error", "log"):
            if detail.get(key):
                verdict[key] = detail[key]
        return ToolResponse(text=json.dumps(verdict)), reward, {"tier": verdict["tier"], "submission": state["submissions"]}

    async def calc_reward(self, instance_id: str, **kwargs) -> float:
        return self.instances.get(instance_id, {}).get("best", FAILED)

    async def release(self, instance_id: str, **kwargs) -> None:
        self.instances.pop(instance_id, None)
