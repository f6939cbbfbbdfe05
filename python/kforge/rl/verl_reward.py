"""verl's custom reward function on kforge's environment: `compute_score(data_source, solution_str, ground_truth,
extra_info)` sends the model's answer to a running `kforge serve` (POST /reward: the candidate is the last code
block defining ModelNew or exporting kforge_forward) and returns its reward: the measured speed-up's, or -1 for a
wrong, missing or unjudged kernel. `ground_truth` is the kforge task id of the sample's problem (POST /tasks).

    custom_reward_function.path=python/kforge/rl/verl_reward.py custom_reward_function.name=compute_score

The service's address comes from KFORGE_SERVICE_URL (default http://127.0.0.1:8080), its token, where it asks
for one, from KFORGE_SERVICE_TOKEN; KFORGE_REWARD_TIMEOUT_S bounds the wait (default 600)."""
import os

from kforge.service_http import http_json

FAILED = -1.0


def reward_request(answers: list[str], tasks: list, timeout_s: float | None = None) -> dict:
    """POST /reward of a running `kforge serve`: {"rewards": [...], "details": [...]}. RuntimeError where the
    service refuses the request itself (an HTTP error: not a judgement of any kernel)."""
    url = os.environ.get("KFORGE_SERVICE_URL", "http://127.0.0.1:8080").rstrip("/") + "/reward"
    timeout_s = float(timeout_s or os.environ.get("KFORGE_REWARD_TIMEOUT_S", 600))
    body = {"query": answers, "labels": [str(t) for t in tasks], "timeout_s": timeout_s}
    status, reply = http_json("POST", url, body, timeout=timeout_s + 60, token=os.environ.get("KFORGE_SERVICE_TOKEN", ""))
    if status != 200:
        raise RuntimeError(f"kforge serve refused the reward request: HTTP {status}: {str(reply)[:300]}")
    return reply


def compute_score(data_source, solution_str, ground_truth, extra_info=None) -> float:
    """verl's signature; a service that cannot be reached is an error of the run, not a wrong kernel: it raises."""
    return float(reward_request([solution_str], [ground_truth])["rewards"][0])
