"""Random (seeded) sequences of serving steps written in each framework's exact annotation format, as a
Kineto trace and as an nsys export, with what each step must read back as (fields, kernels, GPU time).

Times are generated in whole µs (Kineto's unit) and written as ns to nsys; a Kineto trace gets the
profiler's own ``Trace`` span from 0, so both formats put step i at the same ns.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path

from factories import write_nsys_sqlite

FIELDS = (
    "phase",
    "context_requests",
    "context_tokens",
    "generation_requests",
    "generation_tokens",
    "tokens",
    "batch_size",
    "graph_mode",
)


@dataclass
class Step:
    """One generated step: its range (or mark) name, extent in µs, process, expected fields, launches."""

    name: str
    start_us: int
    end_us: int
    pid: int
    expected: dict
    launches: list = field(default_factory=list)  # (correlation, api_start_us, kernel_start_us, kernel_end_us)
    inner: list = field(default_factory=list)  # (name, start_us, end_us) ranges nested in this one


def union_us(intervals) -> int:
    """Length of the union of [s, e) intervals, by the textbook merge (the test's own arithmetic)."""
    total, cur_s, cur_e = 0, None, None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    return total + (cur_e - cur_s if cur_e is not None else 0)


def _exp(phase, cr=None, ct=None, gr=None, gt=None, tokens=None, bs=None, graph_mode=None) -> dict:
    return dict(zip(FIELDS, (phase, cr, ct, gr, gt, tokens, bs, graph_mode)))


def _work(rng: random.Random, kind: str) -> tuple[int, int, int, int]:
    cr = rng.randint(1, 4) if kind in ("prefill", "mixed") else 0
    ct = rng.randint(16 * cr, 4096) if cr else 0
    gr = rng.randint(1, 64) if kind in ("decode", "mixed") else 0
    gt = gr * rng.choice((1, 1, 2)) if gr else 0  # speculative decoding: more tokens than requests
    return cr, ct, gr, gt


def _vllm(rng, kind):
    cr, ct, gr, gt = _work(rng, kind)
    form = rng.choice(("native", "detailed", "new_cached"))
    if form == "native":
        return f"execute_context_{cr}({ct})_generation_{gr}({gt})", _exp(kind, cr, ct, gr, gt, ct + gt, cr + gr)
    if form == "detailed":
        ck, gk = ct + rng.randint(0, 9000) if ct else 0, gt + rng.randint(0, 90000) if gt else 0
        return (
            f"execute_{ct + gt}_context_{cr}(sq{ct}sk{ck}sqsq{ct * ct}sqsk{ct * ck})_generation_{gr}"
            f"(sq{gt}sk{gk}sqsq{gt * gt}sqsk{gt * gk})",
            _exp(kind, cr, ct, gr, gt, ct + gt, cr + gr),
        )
    # before v0.14: request counts only; a side without requests has no tokens
    return f"execute_new_{cr}_cached_{gr}", _exp(
        kind, cr, 0 if cr == 0 else None, gr, 0 if gr == 0 else None, None, cr + gr
    )


def _sglang(rng, kind):
    """SGLang's ``build_step_span_name`` (``step[EXTEND bs= toks=]``, ``step[{MODE} bs=]`` otherwise) with or
    without its roofline suffix (EXTEND ``c_sqsq= c_sqsk= c_sk=``, DECODE ``g_sqsq= g_sqsk= g_sk=``, MIXED
    ``c= g= c_sq= … g_sq= …``), and the variants the issue names (MIXED with ``toks=``, ``c_sq=``/``g_sq=``)."""
    cr, ct, gr, gt = _work(rng, kind)
    form = rng.choice(("base", "roofline", "variant"))
    if kind == "prefill":
        tail = {
            "base": "",
            "roofline": f" c_sqsq={ct * ct} c_sqsk={ct * ct} c_sk={ct}",
            "variant": f" c_sq={ct} c_sqsq={ct * ct} c_sqsk={ct * ct} c_sk={ct}",
        }[form]
        return f"step[EXTEND bs={cr} toks={ct}{tail}]", _exp(kind, cr, ct, 0, 0, ct, cr)
    if kind == "decode":
        if form == "variant":  # a generation-token count (MTP: more tokens than requests)
            return (
                f"step[DECODE bs={gr} g_sq={gt} g_sqsq={gt} g_sqsk={gt * 300} g_sk={gr * 300}]",
                _exp(kind, 0, 0, gr, gt, gt, gr),
            )
        tail = f" g_sqsq={gr} g_sqsk={gr * 300} g_sk={gr * 300}" if form == "roofline" else ""
        return f"step[DECODE bs={gr}{tail}]", _exp(kind, 0, 0, gr, None, None, gr)
    if form == "roofline":
        return (
            f"step[MIXED bs={cr + gr} c={cr} g={gr} c_sq={ct} c_sk={ct} c_sqsq={ct * ct} c_sqsk={ct * ct} "
            f"g_sq={gt} g_sk={gr * 100} g_sqsq={gt} g_sqsk={gt * 100}]",
            _exp(kind, cr, ct, gr, gt, ct + gt, cr + gr),
        )
    if form == "variant":
        return f"step[MIXED bs={cr + gr} toks={ct + gt}]", _exp(kind, None, None, None, None, ct + gt, cr + gr)
    return f"step[MIXED bs={cr + gr}]", _exp(kind, None, None, None, None, None, cr + gr)


def _trtllm(rng, kind, i):
    cr, ct, gr, gt = _work(rng, kind)
    if rng.random() < 0.5:  # newer releases: context tokens as well
        return (
            f"[Executor] _forward_step {i}: {cr} ctx reqs, {ct} ctx tokens, {gr} gen reqs",
            _exp(kind, cr, ct, gr, 0 if gr == 0 else None, ct if gr == 0 else None, cr + gr),
        )
    return (
        f"[Executor] _forward_step {i}: {cr} ctx reqs, {gr} gen reqs",
        _exp(kind, cr, 0 if cr == 0 else None, gr, 0 if gr == 0 else None, None, cr + gr),
    )


def _seed(rng, kind):
    cr, ct, gr, gt = _work(rng, kind)
    if kind == "mixed":
        t = ct + gt
        return (
            f"CG_DISPATCH:actual={t}:mode=NONE:padded={t}:prefill={ct}:decode={gt}",
            _exp("mixed", None, ct, None, gt, t, None, "NONE"),
        )
    t = ct + 512 if kind == "prefill" else gr  # prefill >= 512 tokens, decode (one token a request) <= 64
    mode = "NONE" if kind == "prefill" else rng.choice(("FULL", "PIECEWISE"))
    padded = t if mode == "NONE" else -(-t // 8) * 8
    return f"CG_DISPATCH:actual={t}:mode={mode}:padded={padded}", _exp(kind, None, None, None, None, t, None, mode)


def make_steps(
    preset: str,
    seed: int,
    n: int = 14,
    pid: int = 100,
    *,
    start_us: int = 1000,
    corr0: int = 1,
    capture: bool = True,
    nested: float = 0.0,
) -> list[Step]:
    """``n`` random steps (prefill, decode, mixed; SGLang also idle) of ``preset`` in process ``pid``, one
    after the other with gaps, each launching 1-6 kernels from inside itself (kernels may run after the
    step ends, as a deep queue does; each on its own stream, so no same-stream clipping applies); graph
    captures first when ``capture`` (vLLM, SGLang); a share ``nested`` of SGLang steps carries a
    vLLM-style ``execute_`` range inside it (the same iteration)."""
    rng = random.Random(seed)
    t, corr, out = start_us, corr0, []

    def launches(s, e):
        nonlocal corr
        got = []
        for _ in range(rng.randint(1, 6)):
            api = rng.randint(s + 1, e - 1)
            ks = api + rng.randint(5, 2000)
            got.append((corr, api, ks, ks + rng.randint(1, 500)))
            corr += 1
        return got

    if capture and preset in ("vllm", "sglang"):
        for bs in (rng.choice((8, 16, 32)), 1):
            name, exp = (
                (f"capture_{bs}_{rng.choice(('FULL', 'PIECEWISE'))}", None)
                if preset == "vllm"
                else (f"capture_{bs}_DECODE", None)
            )
            exp = _exp("capture", bs=bs, graph_mode=name.rsplit("_", 1)[1] if preset == "vllm" else None)
            d = rng.randint(3000, 9000)
            out.append(Step(name, t, t + d, pid, exp, launches(t, t + d)))
            t += d + rng.randint(50, 500)
    kinds = ["prefill", "decode", "mixed"]
    for i in range(n):
        kind = kinds[i % 3] if i < 3 else rng.choice(kinds + (["idle"] if preset == "sglang" else []))
        if kind == "idle":
            name, exp = "step[IDLE bs=0]", _exp("idle", 0, 0, 0, 0, 0, 0)
        elif preset == "vllm":
            name, exp = _vllm(rng, kind)
        elif preset == "sglang":
            name, exp = _sglang(rng, kind)
        elif preset == "trtllm":
            name, exp = _trtllm(rng, kind, i + 1)
        elif preset == "seed":
            name, exp = _seed(rng, kind)
        else:
            name, exp = f"ProfilerStep#{i}", _exp("step")
        d = rng.randint(200, 3000)
        step = Step(name, t, t + d, pid, exp, launches(t, t + d))
        if preset == "sglang" and kind != "idle" and rng.random() < nested:
            inner_name, inner = _vllm_of(exp, rng)
            step.inner.append((inner_name, t + 1, t + d - 1))
            step.expected = {k: (v if v is not None or k == "phase" else inner[k]) for k, v in exp.items()}
        out.append(step)
        t += d + rng.randint(0, 300)
    return out


def _vllm_of(exp: dict, rng) -> tuple[str, dict]:
    """A vLLM-style range for the same iteration as an SGLang step (its true counts; SGLang's native
    DECODE/MIXED names leave some of them out)."""
    cr = exp["context_requests"] if exp["context_requests"] is not None else 1
    gr = exp["generation_requests"] if exp["generation_requests"] is not None else (exp["batch_size"] or 2) - cr
    ct = exp["context_tokens"] if exp["context_tokens"] is not None else (0 if cr == 0 else 16 * cr)
    gt = exp["generation_tokens"] if exp["generation_tokens"] is not None else gr
    return f"execute_context_{cr}({ct})_generation_{gr}({gt})", _exp(exp["phase"], cr, ct, gr, gt, ct + gt, cr + gr)


def expected_rows(steps: list[Step], *, marks: bool = False, end_us: int | None = None) -> list[dict]:
    """What ``build_steps`` + ``step_kernels`` must give, in start order: the fields, extent in ns (marks:
    to the next mark of the process, the last to ``end_us``), kernels and GPU time (ns)."""
    rows = []
    for _i, s in enumerate(sorted(steps, key=lambda s: (s.start_us, s.pid))):
        mine = sorted((x for x in steps if x.pid == s.pid), key=lambda x: x.start_us)
        if marks:
            nxt = [x.start_us for x in mine if x.start_us > s.start_us]
            end = nxt[0] if nxt else end_us
        else:
            end = s.end_us
        # a launch belongs to the step of its process whose extent holds the call's start
        ks = [(ks, ke) for x in mine for (_c, api, ks, ke) in x.launches if s.start_us <= api < end]
        rows.append(
            {
                "start_ns": s.start_us * 1000,
                "end_ns": end * 1000,
                "name": s.name,
                **s.expected,
                "kernels": len(ks),
                "gpu_time_ns": union_us(ks) * 1000,
            }
        )
    return rows


def _tid(pid: int) -> int:
    return pid + 1


def kineto_trace(path: Path, steps: list[Step], *, marks: bool = False, profiler_steps: bool = False) -> Path:
    """Write ``steps`` as a Kineto trace: ``user_annotation`` ranges (instant events when ``marks``) on the
    host thread, a ``gpu_user_annotation`` copy of each on the GPU track (never a step), one
    ``cudaLaunchKernel`` per launch and its kernel; ``profiler_steps`` wraps each step in a
    ``ProfilerStep#N`` range as ``torch.profiler`` with a schedule does."""
    end = max(k[3] for s in steps for k in s.launches) + 10
    ev = [
        {
            "ph": "X",
            "cat": "Trace",
            "name": "PyTorch Profiler (0)",
            "pid": "Spans",
            "tid": "PyTorch Profiler",
            "ts": 0,
            "dur": end,
        }
    ]
    for n, s in enumerate(steps):
        host = {"pid": s.pid, "tid": _tid(s.pid)}
        if marks:
            ev.append({"ph": "i", "s": "t", "cat": "user_annotation", "name": s.name, "ts": s.start_us, **host})
        else:
            ev.append(
                {
                    "ph": "X",
                    "cat": "user_annotation",
                    "name": s.name,
                    "ts": s.start_us,
                    "dur": s.end_us - s.start_us,
                    **host,
                }
            )
            ev.append(
                {
                    "ph": "X",
                    "cat": "gpu_user_annotation",
                    "name": s.name,
                    "pid": 0,
                    "tid": 7,
                    "ts": s.launches[0][2],
                    "dur": max(k[3] for k in s.launches) - s.launches[0][2],
                }
            )
        for name, a, b in s.inner:
            ev.append({"ph": "X", "cat": "user_annotation", "name": name, "ts": a, "dur": b - a, **host})
        if profiler_steps:
            ev.append(
                {
                    "ph": "X",
                    "cat": "user_annotation",
                    "name": f"ProfilerStep#{n}",
                    "ts": s.start_us,
                    "dur": s.end_us - s.start_us,
                    **host,
                }
            )
        for corr, api, ks, ke in s.launches:
            ev.append(
                {
                    "ph": "X",
                    "cat": "cuda_runtime",
                    "name": "cudaLaunchKernel",
                    "ts": api,
                    "dur": 3,
                    "args": {"correlation": corr},
                    **host,
                }
            )
            ev.append(
                {
                    "ph": "X",
                    "cat": "kernel",
                    "name": f"void k{corr % 5}()",
                    "pid": 0,
                    "tid": 7,
                    "ts": ks,
                    "dur": ke - ks,
                    "args": {"device": 0, "stream": corr, "correlation": corr},
                }
            )
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": ev}), encoding="utf-8")
    return path


def nsys_trace(path: Path, steps: list[Step], *, marks: bool = False, profiler_steps: bool = False) -> Path:
    """Write ``steps`` as an nsys export: NVTX push/pop ranges (marks when ``marks``) on the host thread
    of each process, one ``cudaLaunchKernel`` runtime row per launch and its kernel (same correlation id,
    the launching process's globalPid)."""
    nvtx, kernels, runtime = [], [], []
    for n, s in enumerate(steps):
        gpid = (1 << 48) | (s.pid << 24)
        gtid = gpid | _tid(s.pid)
        if marks:
            nvtx.append({"start": s.start_us * 1000, "end": None, "eventType": 34, "text": s.name, "globalTid": gtid})
        else:
            nvtx.append(
                {"start": s.start_us * 1000, "end": s.end_us * 1000, "eventType": 59, "text": s.name, "globalTid": gtid}
            )
        for name, a, b in s.inner:
            nvtx.append({"start": a * 1000, "end": b * 1000, "eventType": 59, "text": name, "globalTid": gtid})
        if profiler_steps:
            nvtx.append(
                {
                    "start": s.start_us * 1000,
                    "end": s.end_us * 1000,
                    "eventType": 59,
                    "text": f"ProfilerStep#{n}",
                    "globalTid": gtid,
                }
            )
        for corr, api, ks, ke in s.launches:
            runtime.append(
                {
                    "start": api * 1000,
                    "end": api * 1000 + 3000,
                    "name": "cudaLaunchKernel_v7000",
                    "correlationId": corr,
                    "globalTid": gtid,
                }
            )
            kernels.append(
                {
                    "start": ks * 1000,
                    "end": ke * 1000,
                    "correlationId": corr,
                    "globalPid": gpid,
                    "streamId": corr,
                    "shortName": f"k{corr % 5}",
                }
            )
    return write_nsys_sqlite(path, kernels=kernels, runtime=runtime, nvtx=nvtx)
