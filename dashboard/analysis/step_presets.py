"""What a step annotation says: one table of presets (the serving frameworks' own annotation formats)
plus a user rule, each turning an annotation name into the fields of one step.

A preset reads the names its framework writes (exact strings, each a Kineto ``user_annotation``
range or an NVTX range in nsys):

* ``vllm`` (``Worker.annotate_profile``): ``execute_new_{n}_cached_{m}`` (before v0.14: request counts
  only, new = context, cached = generation), ``execute_context_{n}({t})_generation_{m}({u})`` (v0.14+),
  the detailed ``execute_{T}_context_{n}(sq{Q}sk..sqsq..sqsk..)_generation_{m}(sq{q}sk..sqsq..sqsk..)``
  (context tokens Q, generation tokens q, T tokens in the batch), and graph captures
  ``capture_{N}_{FULL|PIECEWISE}``. Parentheses that hold something else than these counts still give
  the request counts; their tokens are then unknown (None), never 0.
* ``sglang`` (the model runner's step span, ``build_step_span_name``): ``step[EXTEND bs={n} toks={t}]``
  and ``step[{MODE} bs={n}]`` for every other forward mode (``DECODE``, ``MIXED``, ``IDLE``, speculative
  ``DRAFT_EXTEND``/``DRAFT_EXTEND_V2`` and ``TARGET_VERIFY``, ...), with the roofline suffix when enabled
  (EXTEND ``c_sqsq= c_sqsk= c_sk=``; DECODE ``g_sqsq= g_sqsk= g_sk=``, no token count; MIXED ``c= g=``
  request counts and ``c_sq= g_sq=`` tokens); also ``toks=`` on MIXED and ``c_sq=``/``g_sq=`` where a
  release writes them. Graph captures ``capture_{bs}_DECODE``. The preset also reads vLLM-style
  ``execute_`` names: a trace may hold both for one iteration (``steps`` merges them).
* ``trtllm`` (PyTorch executor, NVTX): ``[Executor] _forward_step {iter}: {n} ctx reqs, {m} gen reqs``,
  newer releases with ``, {t} ctx tokens`` too (fields in any order; older: no iteration, no prefix).
* ``seed`` (the seed's server): ``CG_DISPATCH:actual=N:mode=NONE|PIECEWISE|FULL:padded=N`` marks; the
  phase comes from the token threshold (``phases.assign_phases``), not from the name.
* ``torch`` (the PyTorch profiler itself): ``ProfilerStep#N`` ranges, phase ``step``.

Phase from the counts: ``prefill`` with only context work, ``decode`` with only generation work,
``mixed`` with both, ``idle`` with neither. A side with 0 requests has 0 tokens (a fact, not a guess);
otherwise a token count the name does not give stays None. ``batch_size`` is the number of requests.

Example:
    >>> match_name("execute_context_1(888_788544)_generation_0(0)", "vllm")[:6]
    ('prefill', 1, None, 0, 0, None)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

from dashboard.analysis.phases import parse_dispatch_name
from dashboard.analysis.summary import DEFAULT_DISPATCH_PREFIX

PREFILL = "prefill"
DECODE = "decode"
MIXED = "mixed"
IDLE = "idle"
DRAFT = "draft"
VERIFY = "verify"
CAPTURE = "capture"
STEP = "step"  # the source gives no phase
STEP_PHASES = (PREFILL, DECODE, MIXED, IDLE, DRAFT, VERIFY, CAPTURE, STEP)

AUTO = "auto"
RULE = "rule"  # StepSpec.preset of a user rule
COUNT_FIELDS = (
    "context_requests",
    "context_tokens",
    "generation_requests",
    "generation_tokens",
    "tokens",
    "batch_size",
)
# Named groups a user rule may use (the step fields; ``phase`` and ``graph_mode`` are text).
RULE_GROUPS = ("phase", *COUNT_FIELDS, "graph_mode", "padded")


class StepFields(NamedTuple):
    """The fields of one step as its annotation states them (None: the annotation does not say).

    ``phase`` is None only for the seed preset, whose phase the token threshold decides.
    """

    phase: str | None
    context_requests: int | None = None
    context_tokens: int | None = None
    generation_requests: int | None = None
    generation_tokens: int | None = None
    tokens: int | None = None
    batch_size: int | None = None
    graph_mode: str | None = None
    padded: int | None = None


_DIGITS = re.compile(r"[0-9]+")


class StepSourceError(ValueError):
    """A ``--steps`` value that names no preset and is no usable rule (the message says why)."""


def _int(text) -> int | None:
    """A count from annotation text: a non-negative integer below 2**53, else None (not a count)."""
    if text is None or not _DIGITS.fullmatch(str(text).strip()):  # not int(): it reads "888_788544" as a number
        return None
    n = int(str(text).strip())
    return n if n < 2**53 else None


def _add(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


def counted(
    phase: str | None,
    ctx_req: int | None,
    ctx_tok: int | None,
    gen_req: int | None,
    gen_tok: int | None,
    tokens: int | None = None,
    batch_size: int | None = None,
    graph_mode: str | None = None,
    padded: int | None = None,
) -> StepFields:
    """A step from its request/token counts: a side with 0 requests has 0 tokens; ``tokens`` and
    ``batch_size`` default to the sums when both sides are known; ``phase`` None is derived
    (``phase_of``)."""
    if ctx_req == 0 and ctx_tok is None:
        ctx_tok = 0
    if gen_req == 0 and gen_tok is None:
        gen_tok = 0
    tokens = _add(ctx_tok, gen_tok) if tokens is None else tokens
    batch_size = _add(ctx_req, gen_req) if batch_size is None else batch_size
    if phase is None:
        phase = phase_of(ctx_req, ctx_tok, gen_req, gen_tok)
    return StepFields(phase, ctx_req, ctx_tok, gen_req, gen_tok, tokens, batch_size, graph_mode, padded)


def phase_of(ctx_req: int | None, ctx_tok: int | None, gen_req: int | None, gen_tok: int | None) -> str:
    """``prefill`` (only context work), ``decode`` (only generation work), ``mixed`` (both), ``idle``
    (neither), from request counts, else token counts; ``step`` when neither side is known."""
    ctx = ctx_req if ctx_req is not None else ctx_tok
    gen = gen_req if gen_req is not None else gen_tok
    if ctx is None and gen is None:
        return STEP
    if ctx and gen:
        return MIXED
    if ctx:
        return PREFILL
    if gen:
        return DECODE
    return IDLE if ctx == 0 and gen == 0 else STEP


# --- vLLM ------------------------------------------------------------------------------------------
_VLLM_NEW_CACHED = re.compile(r"execute_new_(\d+)_cached_(\d+)")
_VLLM_NATIVE = re.compile(r"execute_context_(\d+)\(([^()]*)\)_generation_(\d+)\(([^()]*)\)")
_VLLM_DETAILED = re.compile(r"execute_(\d+)_context_(\d+)\(([^()]*)\)_generation_(\d+)\(([^()]*)\)")
_SQ = re.compile(r"sq(\d+)sk\d+sqsq\d+sqsk\d+")
_CAPTURE = re.compile(r"capture_(\d+)_([A-Za-z][A-Za-z0-9_]*)")
VLLM_GRAPH_MODES = frozenset({"NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE"})


def _sq(text: str) -> int | None:
    m = _SQ.fullmatch(text.strip())
    return int(m.group(1)) if m else None


def match_vllm(name: str) -> StepFields | None:
    """A vLLM step annotation (module docstring), or None."""
    if not name.startswith(("execute_", "capture_")):
        return None
    if m := _VLLM_NATIVE.fullmatch(name):
        return counted(None, int(m.group(1)), _int(m.group(2)), int(m.group(3)), _int(m.group(4)))
    if m := _VLLM_DETAILED.fullmatch(name):
        return counted(None, int(m.group(2)), _sq(m.group(3)), int(m.group(4)), _sq(m.group(5)), tokens=int(m.group(1)))
    if m := _VLLM_NEW_CACHED.fullmatch(name):
        return counted(None, int(m.group(1)), None, int(m.group(2)), None)
    if (m := _CAPTURE.fullmatch(name)) and m.group(2).upper() in VLLM_GRAPH_MODES:
        return StepFields(CAPTURE, batch_size=int(m.group(1)), graph_mode=m.group(2).upper())
    return None


# --- SGLang ----------------------------------------------------------------------------------------
_SGLANG = re.compile(r"step\[([A-Z][A-Z0-9_]*)\b([^\]]*)\]")
_KV = re.compile(r"(\w+)=(\d+)\b")


def sglang_phase(mode: str) -> str:
    """Phase of an SGLang forward mode: EXTEND/PREFILL prefill, DECODE decode, MIXED mixed, IDLE idle,
    DRAFT_* draft, *VERIFY* verify, any other mode ``step``."""
    if "VERIFY" in mode:
        return VERIFY
    if mode.startswith("DRAFT"):
        return DRAFT
    if mode in ("EXTEND", "PREFILL", "SPLIT_PREFILL"):
        return PREFILL
    return {"DECODE": DECODE, "MIXED": MIXED, "IDLE": IDLE}.get(mode, STEP)


def match_sglang_own(name: str) -> StepFields | None:
    """An SGLang ``step[...]`` or ``capture_{bs}_{MODE}`` annotation, or None."""
    if m := _SGLANG.fullmatch(name):
        phase = sglang_phase(m.group(1))
        kv = {k: int(v) for k, v in _KV.findall(m.group(2))}
        bs, toks = kv.get("bs"), kv.get("toks")
        c_sq, g_sq = kv.get("c_sq"), kv.get("g_sq")
        if phase == PREFILL:
            return counted(phase, bs, c_sq if c_sq is not None else toks, 0, None, toks, bs)
        if phase == DECODE:
            return counted(phase, 0, None, bs, g_sq, toks if toks is not None else g_sq, bs)
        if phase == MIXED:
            return counted(phase, kv.get("c"), c_sq, kv.get("g"), g_sq, toks, bs)
        if phase == IDLE:
            return counted(phase, 0, None, 0, None, toks, bs)
        return StepFields(phase, tokens=toks, batch_size=bs)
    if (m := _CAPTURE.fullmatch(name)) and m.group(2).upper() not in VLLM_GRAPH_MODES:
        return StepFields(CAPTURE, batch_size=int(m.group(1)))
    return None


def match_sglang(name: str) -> StepFields | None:
    """An SGLang annotation, or a vLLM-style one (the same iteration may carry both), or None."""
    return match_sglang_own(name) or match_vllm(name)


# --- TensorRT-LLM ----------------------------------------------------------------------------------
_TRTLLM = re.compile(r"(?:\[Executor\] )?_forward_step(?: (\d+))?: (.*)")
_TRT_FIELD = re.compile(r"(\d+) (ctx reqs|ctx tokens|gen reqs|gen tokens)\b")


def match_trtllm(name: str) -> StepFields | None:
    """A TensorRT-LLM ``_forward_step`` annotation (needs both request counts), or None."""
    m = _TRTLLM.fullmatch(name)
    if not m:
        return None
    f = {k: int(v) for v, k in _TRT_FIELD.findall(m.group(2))}
    if "ctx reqs" not in f or "gen reqs" not in f:
        return None
    return counted(None, f["ctx reqs"], f.get("ctx tokens"), f["gen reqs"], f.get("gen tokens"))


# --- the PyTorch profiler, the seed ----------------------------------------------------------------
_PROFILER_STEP = re.compile(r"ProfilerStep#(\d+)")


def match_torch(name: str) -> StepFields | None:
    """A ``ProfilerStep#N`` range (phase ``step``), or None."""
    return StepFields(STEP) if _PROFILER_STEP.fullmatch(name) else None


def match_seed(name: str, prefix: str = DEFAULT_DISPATCH_PREFIX) -> StepFields | None:
    """A seed dispatch mark (``prefix`` + ``:key=value`` fields; phase None: the threshold decides), or None.

    ``actual`` gives the tokens, ``mode`` the graph mode, ``padded`` the padded token count,
    ``prefill=``/``num_prefill_tokens=`` and ``decode=``/``num_decode_tokens=`` the context and generation tokens.
    """
    if not name.startswith(prefix):
        return None
    f = parse_dispatch_name(name)
    return StepFields(
        None,
        context_tokens=_int(f.get("prefill", f.get("num_prefill_tokens"))),
        generation_tokens=_int(f.get("decode", f.get("num_decode_tokens"))),
        tokens=_int(f.get("actual")),
        graph_mode=f.get("mode") or None,
        padded=_int(f.get("padded")),
    )


# --- the table -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Preset:
    """One step source: ``match`` turns a name into StepFields (None: not a step); ``own`` says whether a
    name is one of the preset's own annotations (what ``auto`` counts); ``kind`` is ``ranges`` (a step
    is a range's own [start, end)) or ``marks`` (a step lasts to the next mark of its process)."""

    key: str
    label: str
    kind: str
    match: object  # Callable[[str], StepFields | None]
    own: object  # Callable[[str], bool]


PRESETS: dict[str, Preset] = {
    "seed": Preset("seed", "CG_DISPATCH marks", "marks", match_seed, lambda n: match_seed(n) is not None),
    "vllm": Preset("vllm", "vLLM annotations", "ranges", match_vllm, lambda n: match_vllm(n) is not None),
    "sglang": Preset("sglang", "SGLang annotations", "ranges", match_sglang, lambda n: match_sglang_own(n) is not None),
    "trtllm": Preset(
        "trtllm", "TensorRT-LLM annotations", "ranges", match_trtllm, lambda n: match_trtllm(n) is not None
    ),
    "torch": Preset(
        "torch", "PyTorch profiler steps (ProfilerStep#N)", "ranges", match_torch, lambda n: match_torch(n) is not None
    ),
}
# ``auto``: the framework preset with most annotations in the trace (ties in this order: SGLang's preset
# also reads the vLLM-style names it may carry); ProfilerStep#N only where no other preset matches.
AUTO_ORDER = ("sglang", "vllm", "trtllm", "seed")
AUTO_FALLBACK = "torch"


def match_name(name: str, preset: str, prefix: str = DEFAULT_DISPATCH_PREFIX) -> StepFields | None:
    """``PRESETS[preset].match(name)`` (the seed preset with ``prefix``)."""
    if preset == "seed":
        return match_seed(name, prefix)
    return PRESETS[preset].match(name)


# --- the user rule ---------------------------------------------------------------------------------
_PHASE_WORDS = {
    PREFILL: PREFILL,
    "extend": PREFILL,
    "context": PREFILL,
    "ctx": PREFILL,
    "prompt": PREFILL,
    DECODE: DECODE,
    "generation": DECODE,
    "gen": DECODE,
    "generate": DECODE,
    MIXED: MIXED,
    "chunked": MIXED,
    IDLE: IDLE,
    DRAFT: DRAFT,
    VERIFY: VERIFY,
    CAPTURE: CAPTURE,
}


def compile_rule(text: str) -> re.Pattern:
    """Compile a user rule: a regular expression whose named groups (``RULE_GROUPS``) give the fields.

    Raises:
        StepSourceError: not a regular expression, a group name that is no step field, or a rule that
            matches the empty name (it would make every range a step).
    """
    try:
        rx = re.compile(text)
    except re.error as exc:
        raise StepSourceError(f"{text!r}: not a regular expression ({exc})") from None
    unknown = sorted(set(rx.groupindex) - set(RULE_GROUPS))
    if unknown:
        raise StepSourceError(
            f"{text!r}: unknown group name(s) {', '.join(unknown)}; a rule's named groups are {', '.join(RULE_GROUPS)}"
        )
    if rx.search(""):
        raise StepSourceError(
            f"{text!r}: the rule matches an empty name, so every annotation would be a "
            "step; anchor it to the names of your steps, e.g. '^forward_(?P<tokens>\\d+)'"
        )
    return rx


def match_rule(name: str, rx: re.Pattern) -> StepFields | None:
    """The fields a user rule's named groups give (``re.search``), or None. Without a ``phase`` group the
    phase comes from the counts (``step`` without them); a ``phase`` group's text is read as a phase
    word (prefill/extend/context, decode/generation, mixed, idle, draft, verify, capture; else ``step``)."""
    m = rx.search(name)
    if not m:
        return None
    g = {k: v for k, v in m.groupdict().items() if v is not None}
    counts = {k: _int(g.get(k)) for k in COUNT_FIELDS}
    phase = _PHASE_WORDS.get(g["phase"].strip().lower(), STEP) if "phase" in g else None
    return counted(
        phase,
        counts["context_requests"],
        counts["context_tokens"],
        counts["generation_requests"],
        counts["generation_tokens"],
        counts["tokens"],
        counts["batch_size"],
        g.get("graph_mode") or None,
        _int(g.get("padded")),
    )


@dataclass(frozen=True)
class StepSpec:
    """A parsed ``--steps`` value: ``preset`` is ``auto``, a key of PRESETS or ``rule`` (then ``rule`` holds
    the regular expression). ``prefix`` and ``threshold`` are the seed preset's parameters."""

    preset: str = AUTO
    rule: str | None = None
    prefix: str = DEFAULT_DISPATCH_PREFIX
    threshold: float | None = None


_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")


def parse_step_source(
    text: str | None, *, prefix: str = DEFAULT_DISPATCH_PREFIX, threshold: float | None = None
) -> StepSpec:
    """Read a ``--steps`` value: ``auto`` (default for None/empty), a preset name, or a user rule.

    A bare word that is no preset is refused (a typo of a preset, not a rule that would match any name
    containing it); write a rule as a regular expression, e.g. ``^forward_``.

    Raises:
        StepSourceError: an unknown preset name or an unusable rule (``compile_rule``).
    """
    value = (text or "").strip()
    if not value or value.lower() == AUTO:
        return StepSpec(AUTO, None, prefix, threshold)
    if value.lower() in PRESETS:
        return StepSpec(value.lower(), None, prefix, threshold)
    if _WORD.fullmatch(value):
        raise StepSourceError(
            f"{value!r}: unknown preset; one of {AUTO}, {', '.join(PRESETS)}, or a "
            f"regular expression with named groups (e.g. '^{value}_(?P<tokens>\\d+)' for steps named "
            f"{value}_<tokens>)"
        )
    compile_rule(value)
    return StepSpec(RULE, value, prefix, threshold)
