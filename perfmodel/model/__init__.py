"""Performance models: the seed slides' CGMA bound (``seed``) and a per-resource bottleneck model
(``bottleneck``) beside it, with the cache-reuse traffic estimate in ``traffic``.

Model code never prints and never reads files: it takes counts (the simulator's ``Counts.to_json()`` dict),
a device profile and an occupancy result, and returns typed results that ``perfmodel.analyze`` assembles.
"""
from perfmodel.model.seed import SeedModel, achievable_gflops, cgma, required_cgma, seed_model

__all__ = ["SeedModel", "achievable_gflops", "cgma", "required_cgma", "seed_model"]
