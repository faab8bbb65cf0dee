"""Where the global-memory sectors are served from: an estimate of L1 and L2 reuse.

The simulator counts, per warp-level request, the distinct 32-byte sectors it touches (``load_sectors``) and,
over the whole run, the distinct sectors touched at all (``unique_load_sectors``: the compulsory traffic). The
analyzer also simulates one interior block on its own, which gives that block's footprint (its distinct sectors)
and its sector count. From these:

* **L1** (only where the device caches global loads in L1, ``l1_bytes > 0``): a sector a block touches again is
  an L1 hit, so the hit rate is the block's reuse fraction ``1 - footprint / sectors``. Reuse inside a block is
  close in time (its warps run the same loop iteration together), so it is counted whatever the block's
  lifetime footprint: on the H100 measurements this matches ncu's L1 hit rate for the naive matmul (88% and
  95%) and the 1-D convolutions (85%), where a capacity limit (L1 / (blocks x footprint)) gave 5-21%.
* **L2** (device-wide): the compulsory traffic (unique sectors) comes from DRAM; beyond it, while the working
  set of one wave of blocks (the grid's footprint x the wave's share of the blocks) fits in L2 every further
  access hits; as it outgrows L2, the excess traffic misses in proportion ``(working_set - l2_bytes) /
  working_set``.
* ``l2_state="warm"``: a previous identical launch left its whole footprint in L2 if it fits, so the compulsory
  loads hit and the compulsory stores are absorbed by L2 (written back later, outside the kernel); a footprint
  larger than L2 left nothing useful (an LRU sweep evicts its own beginning); ``cold`` (default): nothing is
  resident.
* Stores are write-through to L2 (Fermi and later write global stores through L1), so every store sector reaches
  L2; DRAM writes are the unique store sectors (written back once) plus the same spill share.
* **Local memory** (a thread's run-time indexed arrays and spills; :func:`with_local`): interleaved word by word
  across a warp's lanes, so a warp access of one word each is 128 coalesced bytes (sectors = bytes / 32). Stores
  go through to L2 and stay in L1; a load hits L1 with probability ``L1 / footprint`` of the resident threads'
  arrays on one SM (random reuse over a footprint larger than L1); the misses and every store reach L2; when the
  resident threads' arrays over the whole GPU outgrow L2, every store is written back to DRAM and the L2 load
  misses are ``1 - L2 / footprint``. Measured on an H200 (validation/local_memory_h200_ncu.csv, 64 KB to 16 MB
  a SM): L1 hits 100 / 97 / 29 / 7.9 / 2.4% against 100 / 100 / 25 / 6.3 / 1.6%; DRAM writes 0.03, 10.8, 139,
  551, 2,206 MB against 0, 0, 138, 553, 2,214 MB.

On G80 (no L1 or L2 for global memory) every sector goes to DRAM.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace

SECTOR_BYTES = 32


@dataclass(frozen=True)
class Traffic:
    load_sectors: float            # requested by warps (after per-request coalescing)
    store_sectors: float
    l1_hit_rate: float             # fraction of load sectors served by L1
    block_reuse: float             # fraction of a block's load sectors that re-touch its own data
    l2_load_sectors: float         # load sectors that reach L2 (L1 misses)
    l2_store_sectors: float
    l2_hit_rate: float             # fraction of L2 load sectors served by L2
    dram_read_bytes: float
    dram_write_bytes: float
    working_set_bytes: float       # one wave's share of the grid's distinct sectors
    footprint_bytes: float         # distinct bytes the whole grid touches
    l2_state: str = "cold"         # what was in L2 at the start (resident_fraction); warm = back-to-back launches
    # local memory (with_local): its L1 hit rate, bytes reaching L2, DRAM bytes read and written
    local_l1_hit_rate: float = 1.0
    local_l2_bytes: float = 0.0
    local_dram_read_bytes: float = 0.0
    local_dram_write_bytes: float = 0.0

    @property
    def l2_bytes(self) -> float:
        return (self.l2_load_sectors + self.l2_store_sectors) * SECTOR_BYTES + self.local_l2_bytes

    @property
    def dram_bytes(self) -> float:
        return self.dram_read_bytes + self.dram_write_bytes + self.local_dram_read_bytes + \
            self.local_dram_write_bytes

    def to_json(self) -> dict:
        return {**asdict(self), "l2_bytes": self.l2_bytes, "dram_bytes": self.dram_bytes}


def block_reuse_fraction(block_sectors: float, block_footprint_sectors: float) -> float:
    """Share of one block's load sectors that touch a sector the block touched before."""
    if block_sectors <= 0:
        return 0.0
    return min(1.0, max(0.0, 1.0 - block_footprint_sectors / block_sectors))


def l2_spill_fraction(working_set_bytes: float, l2_bytes: float) -> float:
    """Share of the non-compulsory L2 traffic that misses: 0 while one wave's working set fits in L2."""
    if working_set_bytes <= 0:
        return 0.0
    return min(1.0, max(0.0, (working_set_bytes - l2_bytes) / working_set_bytes))


L2_STATES = ("cold", "warm")


def resident_fraction(footprint_bytes: float, l2_bytes: float, l2_state: str) -> float:
    """Share of the kernel's compulsory sectors already in L2 when it starts. ``cold`` (the default; what an
    L2-flushed or first launch measures): none. ``warm`` (what back-to-back launches in a timing loop measure): all
    of them when the footprint (loads and stores' lines alike) fits in L2, none when it does not - the previous
    identical launch swept its footprint in the same order, so with a least-recently-used replacement each line
    was evicted by the later part of that sweep before this launch asks for it again. Measured (docs/model.md
    "L2 state"): the 96 H100/H200 cases whose footprint is 1.07-15x the L2 run warm at 0.93-1.09x their cold time,
    e.g. a 64 MiB reduction 405.8 vs 405.3 us on the H100's 50 MiB L2 (a share ``L2 / footprint`` resident would
    have made it 1.3x faster)."""
    if l2_state not in L2_STATES:
        raise ValueError(f"L2 state {l2_state!r}: expected one of {', '.join(L2_STATES)}")
    if l2_state == "cold" or footprint_bytes <= 0 or l2_bytes <= 0:
        return 0.0
    return 1.0 if footprint_bytes <= l2_bytes else 0.0


def estimate_traffic(*, load_sectors: float, store_sectors: float, unique_load_sectors: float,
                     unique_store_sectors: float, block_load_sectors: float | None,
                     block_footprint_sectors: float | None, wave_blocks: float,
                     total_blocks: int, l1_bytes: float, l2_bytes: float, l2_state: str = "cold") -> Traffic:
    """Estimate L1 hits, L2 traffic and DRAM bytes (see the module docstring for the rules). ``l2_state``:
    :func:`resident_fraction` of the compulsory sectors are L2 hits (``warm``), or none (``cold``)."""
    unique_load_sectors = min(unique_load_sectors, load_sectors)
    unique_store_sectors = min(unique_store_sectors, store_sectors)
    if block_load_sectors is None or block_footprint_sectors is None or total_blocks <= 0:
        # no per-block figure: spread the compulsory sectors evenly over the blocks (no reuse inside a block
        # beyond what the whole grid shows)
        block_load_sectors = load_sectors / max(total_blocks, 1)
        block_footprint_sectors = unique_load_sectors / max(total_blocks, 1)
    reuse = block_reuse_fraction(block_load_sectors, block_footprint_sectors)
    l1_hit = reuse if l1_bytes > 0 else 0.0
    l2_load = load_sectors * (1.0 - l1_hit)
    # the compulsory sectors can never be L1 hits of the whole grid
    l2_load = max(l2_load, unique_load_sectors)

    footprint = (unique_load_sectors + unique_store_sectors) * SECTOR_BYTES
    share = min(1.0, wave_blocks / total_blocks) if total_blocks > 0 else 1.0
    working_set = footprint * share
    if l2_bytes <= 0:
        spill = 1.0
    else:
        spill = l2_spill_fraction(working_set, l2_bytes)
    cold = 1.0 - resident_fraction(footprint, l2_bytes, l2_state)
    dram_read = (cold * unique_load_sectors + spill * (l2_load - unique_load_sectors)) * SECTOR_BYTES
    dram_write = (cold * unique_store_sectors + spill * (store_sectors - unique_store_sectors)) * SECTOR_BYTES
    l2_hit = 0.0 if l2_load <= 0 else 1.0 - dram_read / (l2_load * SECTOR_BYTES)
    return Traffic(
        load_sectors=load_sectors,
        store_sectors=store_sectors,
        l1_hit_rate=l1_hit,
        block_reuse=reuse,
        l2_load_sectors=l2_load,
        l2_store_sectors=store_sectors,
        l2_hit_rate=max(0.0, l2_hit),
        dram_read_bytes=dram_read,
        dram_write_bytes=dram_write,
        working_set_bytes=working_set,
        footprint_bytes=footprint,
        l2_state=l2_state,
    )



def with_local(traffic: Traffic, local: dict, *, bytes_per_thread: float, resident_threads_per_sm: float,
               resident_threads: float, l1_bytes: float, l2_bytes: float) -> Traffic:
    """``traffic`` with local memory's share (the module docstring's rules): ``local`` the counts' local figures
    (``load_bytes``/``store_bytes``, thread-level), ``bytes_per_thread`` the compiler's local frame, the resident
    threads on one SM and on the GPU (capped by the grid's)."""
    load = float(local.get("load_bytes", 0) or 0)
    store = float(local.get("store_bytes", 0) or 0)
    if load <= 0 and store <= 0:
        return traffic
    per_sm = bytes_per_thread * resident_threads_per_sm
    hit = 0.0 if l1_bytes <= 0 else (1.0 if per_sm <= l1_bytes else l1_bytes / per_sm)
    l2_load = load * (1.0 - hit)
    footprint = bytes_per_thread * resident_threads
    if l2_bytes <= 0:               # no cache for local memory (CC 1.x): every access is DRAM traffic
        read, write, l2_traffic = load, store, 0.0
    elif footprint > l2_bytes:
        read, write, l2_traffic = l2_load * (1.0 - l2_bytes / footprint), store, l2_load + store
    else:
        read, write, l2_traffic = 0.0, 0.0, l2_load + store
    return replace(traffic, local_l1_hit_rate=hit, local_l2_bytes=l2_traffic, local_dram_read_bytes=read,
                   local_dram_write_bytes=write)


def cc1_traffic(traffic: Traffic, g: dict, rule: str) -> Traffic:
    """On compute capability 1.x (``rule`` ``cc1.0`` or ``cc1.2``) nothing caches global memory and every memory
    transaction goes to DRAM whole: the DRAM bytes are the simulator's transaction bytes under the device's rule
    (``global.cc10_load_bytes`` ..., perfmodel/sim/coalesce.py) instead of the 32-byte sectors. Other rules, or
    counts without the CC 1.x figures (hand-written, older simulator), leave ``traffic`` as it is."""
    prefix = {"cc1.0": "cc10", "cc1.2": "cc12"}.get(rule)
    if prefix is None or f"{prefix}_load_bytes" not in g and f"{prefix}_store_bytes" not in g:
        return traffic
    read = float(g.get(f"{prefix}_load_bytes", 0) or 0)
    write = float(g.get(f"{prefix}_store_bytes", 0) or 0)
    return replace(traffic, l1_hit_rate=0.0, l2_hit_rate=0.0, dram_read_bytes=read, dram_write_bytes=write,
                   l2_load_sectors=0.0, l2_store_sectors=0.0)
