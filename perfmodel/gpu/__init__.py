"""Real-GPU validation: run a kernel spec on a GPU through CuPy/NVRTC (``perfmodel validate``), collect Nsight
Compute counters, and compare the model against a committed measured dataset (``perfmodel accuracy``).

Only :mod:`perfmodel.gpu.runner`, :mod:`perfmodel.gpu.env` and :mod:`perfmodel.gpu.ncu` need CuPy (the optional
extra ``pip install perfmodel[gpu]``); :mod:`perfmodel.gpu.accuracy` works from the JSON data alone, so CI (which
has no GPU) can check the model against the measurements.
"""
