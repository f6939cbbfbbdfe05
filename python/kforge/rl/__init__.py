"""kforge's environment for RL frameworks. The reward is `kforge serve`'s: POST /reward takes OpenRLHF's remote
reward model contract as it is (`--remote_rm_url http://HOST:PORT/reward`, each sample's label its task id);
verl_reward.py is verl's custom reward function over the same endpoint."""
