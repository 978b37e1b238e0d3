"""What every subcommand shares: exit codes, messages, argument types (each refuses a bad value by name) and options."""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

from dashboard.errors import TraceError

EXIT_INPUT_ERROR = 2


_ANSWER = object()  # _say's default destination: the command's answer on stdout


def _say(*parts, file=_ANSWER) -> None:
    """Write one line: to stdout as part of the command's answer (``write_answer``), or to ``file`` (stderr),
    where a line that cannot be written (stderr closed or full) is dropped: the answer still goes out."""
    line = " ".join(str(p) for p in parts) + "\n"
    if file is _ANSWER:
        write_answer(line)
        return
    try:
        file.write(line)
    except (AttributeError, OSError, ValueError):  # None (closed), full, or closed by the program
        pass


def write_answer(text: str) -> None:
    """Write ``text`` to stdout, all of it, or raise.

    Why not ``sys.stdout.write``: where a disk fills mid-answer, Python's buffered stdout writes what fits and
    drops the rest without an error (a 60 kB answer redirected to a 12 kB filesystem: 12 kB written, exit 0).

    Raises:
        TraceError: stdout is closed or cannot take the whole answer (exit 2).
        BrokenPipeError: the reader left (``| head``): the command ends quietly (``reader_left``).
    """
    out = sys.stdout
    if out is None:
        raise TraceError("cannot write the answer: standard output is closed")
    try:
        fd = out.fileno()
    except (AttributeError, OSError, ValueError):  # not a file (a test's capture): its own write is all there is
        out.write(text)
        return
    try:
        out.flush()
        data = memoryview(text.encode(out.encoding or "utf-8", out.errors or "strict"))
        while data:
            data = data[os.write(fd, data) :]
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise TraceError(f"cannot write the answer to standard output ({exc.strerror or exc})") from exc


def reader_left() -> None:
    """After a ``BrokenPipeError`` on stdout (``tracedash summarize T | head``): nothing more is written there,
    and Python's flush at exit finds nothing to complain of."""
    try:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - kept open until the process ends
    except OSError:
        pass


def write_file(path: Path, text: str | bytes) -> None:
    """Write ``text`` (as UTF-8; bytes as they are: an image) to the file ``path`` whole or not at all: into a
    temporary file beside it, renamed over it once written (a disk that filled mid-write left a cut-off file
    where the user's earlier one had been). A path that exists and is no regular file (``/dev/null``, a FIFO)
    is written directly; a link, through it.

    Raises:
        TraceError: it cannot be written (exit 2).
    """
    import tempfile

    data = text.encode("utf-8") if isinstance(text, str) else text
    target = path.resolve() if path.is_symlink() else path
    tmp = None
    try:
        if target.exists() and not target.is_file():
            with open(target, "wb") as f:
                f.write(data)
            return
        mode = target.stat().st_mode & 0o7777 if target.exists() else 0o666 & ~_umask()
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), mode)  # as a new file (or the replaced one) would have it, not mkstemp's 0600
            f.write(data)
        os.replace(tmp, target)
        tmp = None
    except OSError as exc:
        raise TraceError(f"{path}: cannot write ({exc.strerror or exc})") from exc
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def default_trace_dir() -> Path | None:
    """``./sample_traces`` if present, else the repository's bundled ``sample_traces/``."""
    for candidate in (Path.cwd() / "sample_traces", Path(__file__).resolve().parents[2] / "sample_traces"):
        if candidate.is_dir():
            return candidate
    return None


def bounded(kind: type, what: str, *, lo=None, hi=None, above=None, error: str = "", not_finite: str = ""):
    """An argparse ``type``: the text as ``kind`` (int or a finite float), within ``lo``..``hi`` (inclusive)
    and above ``above`` (exclusive), each bound optional.

    Args:
        what: the value's name in the error for text that is not one ("not a port number: 'x'").
        error: the error for a value out of bounds, formatted with ``value`` (the number) and ``text``.
        not_finite: the error for inf/nan (default: the same as for text that is not a number).
    """

    def parse(text: str):
        shown = elided(text)  # a 400-digit value is not echoed whole
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not {what}: {shown!r}") from None
        if kind is float and not math.isfinite(value):
            raise argparse.ArgumentTypeError((not_finite or f"not {what}: {{text!r}}").format(text=shown))
        if (lo is not None and value < lo) or (hi is not None and value > hi) or (above is not None and value <= above):
            raise argparse.ArgumentTypeError(error.format(value=value if shown == text else shown, text=shown))
        return value

    return parse


_port = bounded(int, "a port number", lo=1, hi=65535, error="port must be 1-65535, got {value}")
_dask_workers = bounded(int, "a number of workers", lo=1, error="at least 1 worker, got {value}")
_slices = bounded(int, "a number of time slices", lo=1, hi=4096, error="--slices must be 1-4096, got {value}")
_serve_workers = bounded(int, "a number of workers", lo=1, hi=64, error="--workers must be 1-64, got {value}")
_top = bounded(int, "a row count", lo=1, error="--top must be at least 1, got {value}")
_pid = bounded(int, "a process id", lo=-(2**63), hi=2**63 - 1, error="not a process id: {text!r}")  # an int64
# --fail-if-slower PCT: a finite percentage >= 0
_slower_percent = bounded(
    float,
    "a percentage",
    lo=0,
    error="PCT must be 0 or more (how much slower is allowed), got {text}",
    not_finite="not a finite percentage: {text!r}",
)
_tokens = bounded(float, "a token count", above=0, error="the threshold must be above 0 tokens, got {text}")


def _prefix(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("the dispatch prefix must not be empty (every NVTX mark would count)")
    return text


def say_warnings(name: str, lines) -> None:
    """A trace's warnings (a summary's ``warnings`` list: rows not loaded, clipped overruns…) on stderr, one
    ``tracedash: warning: NAME: …`` line each, as ``summarize`` gives them: a command's output read alone would
    otherwise hide that some of the trace was left out."""
    for line in lines:
        _say(f"tracedash: warning: {name}: {line}", file=sys.stderr)


def _cache(args):
    from dashboard.data.cache import TraceCache

    return TraceCache(Path(args.cache_dir) if args.cache_dir else None, enabled=not args.no_cache)


class _Progress:
    """A tqdm bar over loading stages, on stderr, only when stderr is a terminal."""

    # How many stages a load has, known from its first (``data.trace.load_trace``): a report is exported, then
    # read as SQLite (the reader's five stages), then summarised; cached frames and PyTorch traces are read in one.
    STAGES = {"nsys export": 7, "names": 6, "cached frames": 2, "PyTorch trace": 2, "summary JSON": 1}

    def __init__(self, name: str):
        self.name = name
        self.bar = None

    def __call__(self, stage: str, rows=None) -> None:
        if sys.stderr is None:  # closed by the caller (`2>&-`): nowhere to draw
            return
        if self.bar is None:
            from tqdm import tqdm

            self.bar = tqdm(
                total=self.STAGES.get(stage),  # None (a count, no fraction) for a load this does not know
                desc=f"loading {self.name}",
                unit="stage",
                leave=False,
                disable=None,
                file=sys.stderr,
            )
        else:
            self.bar.update(1)
        counts = ", ".join(f"{n:,} {kind}" for kind, n in rows or ())
        self.bar.set_postfix_str(f"{stage} ({counts})" if counts else stage)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _size(text: str) -> int:
    """A byte count from ``512M``, ``2G``, ``1.5GiB``, ``4096`` (binary units)."""
    import re

    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*", text, re.IGNORECASE)
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (use e.g. 512M, 2G, 1.5GiB)")
    value = float(m.group(1)) * 1024 ** " kmgt".index(m.group(2).lower() or " ")
    if value < 1:
        raise argparse.ArgumentTypeError(f"size must be positive, got {text!r}")
    if value > MAX_SIZE_BYTES:  # no machine has it (and 400 digits would not even be a finite number)
        raise argparse.ArgumentTypeError(f"size too large: {elided(text)!r} (at most {MAX_SIZE_BYTES // 1024**4:,}T)")
    return int(value)


MAX_SIZE_BYTES = 1 << 60  # 1 EiB


def elided(text: str, limit: int = 40) -> str:
    """``text`` for a message, its middle elided past ``limit`` characters."""
    return text if len(text) <= limit else text[:20] + "…" + text[-12:]


def _load_for_view(args):
    from dashboard.data.trace import load_trace

    return load_trace(args.trace, dispatch_prefix="CG_DISPATCH", cache=_cache(args))


def _check_link_trace(link_trace: str, path: Path) -> None:
    """Refuse a link made for another trace than ``path``.

    A link's ``trace`` is ``NAME@HASH`` (``app.trace_files.trace_id``: file name + the start of the SHA-256 of
    the file). With a hash, the file must have the same one, or one it starts with (a hash shortened by hand to
    ``SHORT_ID_HEX`` digits or more, as the page takes it); a renamed copy is the same trace; another run saved
    under the same name, e.g. nsys' default ``report1``, is not. Without a hash, the same name.

    Raises:
        TraceError: the link names another trace (exit 2), with the way to use its settings anyway.
    """
    if not link_trace or not path.is_file():
        return  # no trace in the link; a missing file is reported by the loader
    from dashboard.app.trace_files import shortened_id, trace_id

    ours = trace_id(path)
    name, _, digest = link_trace.rpartition("@") if "@" in link_trace else (link_trace, "", "")
    if (digest and digest == ours.rpartition("@")[2]) or (not digest and name == path.name):
        return
    if digest and shortened_id(f"{path.name}@{digest}", ours):  # the name aside, as for a full hash
        return
    raise TraceError(
        f"the link was made for trace '{link_trace}', not for {path.name} ({ours}): pass the trace "
        "it was made for, or remove 'trace=' from the link to apply its settings to this file"
    )


def _bare_link_trace(url: str | None, state, path: Path):
    """``state`` of a link whose ``trace`` is a bare file name (``?trace=run.sqlite``, which the page opens): the
    same name as ``path`` is that file (the parser's "not a trace id" warning dropped); another name is another
    trace, refused as ``_check_link_trace`` refuses one.

    Raises:
        TraceError: the link names another file (exit 2).
    """
    from dataclasses import replace
    from urllib.parse import parse_qs

    from dashboard.render.export import link_query

    raw = parse_qs(link_query(url or "")).get("trace", [""])[0]
    if state.trace or not raw or "@" in raw:
        return state
    if raw != path.name:
        raise TraceError(
            f"the link was made for the file '{raw[:120]}', not for {path.name}: pass that file, or remove 'trace=' "
            "from the link to apply its settings to this file"
        )
    return replace(state, warnings=tuple(w for w in state.warnings if not w.startswith("Ignored trace=")))


def _check_output(path: Path, inputs: tuple[Path, ...] = ()) -> None:
    """Refuse an output path that cannot be written, before any loading or rendering.

    Raises:
        TraceError: its folder does not exist or is not a folder, the path is a folder, or it is one of the
            ``inputs`` (the user's trace would be overwritten) (exit 2).
    """
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise TraceError(f"{path}: is a folder; give the file to write")
    for source in inputs:
        if _same_file(path, source):
            raise TraceError(f"{path}: is the trace being read; give another file to write, or leave -o out")
    if parent.exists() and not parent.is_dir():
        raise TraceError(f"{path}: cannot write: {parent} is a file, not a folder")
    if not parent.is_dir():
        raise TraceError(f"{path}: cannot write: its folder {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise TraceError(f"{path}: cannot write: no permission to write in {parent}")


def _same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name one existing file (a link or another spelling of the path included)."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # either does not exist (yet)
        return False


def _image_format(fmt: str | None, output: Path) -> str:
    """The image format of ``export``: ``--format``, else the output's suffix, else png.

    Raises:
        TraceError: the suffix is not an image format we write, or names another format than ``--format``
            (``--format pdf -o x.png`` would write a PDF under a .png name).
    """
    from dashboard.render.export import FORMATS

    suffix = output.suffix.lstrip(".").lower()
    if fmt and suffix in FORMATS and suffix != fmt:
        raise TraceError(
            f"--format {fmt} but the output {output.name} ends in .{suffix}: name it .{fmt}, "
            f"or leave --format out to write {suffix}"
        )
    if not fmt and suffix and suffix not in FORMATS:
        raise TraceError(
            f"{output.name}: .{suffix} is not an image format tracedash writes: name the file .png, .svg or .pdf"
        )
    return fmt or suffix or "png"


def _with_steps(state, args):
    """The view state with ``--steps`` (when given) as its step source: the option wins over the link's key."""
    if getattr(args, "steps", None) is None:
        return state
    from dataclasses import replace

    from dashboard.state import BY_NAME

    return replace(state, steps=BY_NAME["steps"].parse(args.steps))


EXIT_SLOWER = 3  # tracedash diff --fail-if-slower: the candidate is slower than allowed


SLOWER_HELP = (
    "exit 3 when the candidate is more than PCT %% slower. Slower means: with dispatch marks, the "
    "step time of the worst phase (prefill/decode/...) priced at the baseline's token mix (dispatches "
    "paired by phase and token count); without them, kernel time at the baseline's kernel counts "
    "(kernel names on both sides). A gate that cannot be measured (n/a) never fails (default: off: the exit "
    "code does not depend on speed)"
)


def _rule_param(text: str) -> tuple[str, str, float]:
    """``--param RULE.NAME=VALUE`` -> (rule, name, number)."""
    import re

    m = re.fullmatch(r"\s*([a-z][a-z0-9-]*)\.([a-z_]+)\s*=\s*(-?[0-9.]+(?:e[0-9]+)?)\s*", text, re.IGNORECASE)
    if not m:
        raise argparse.ArgumentTypeError(f"expected RULE.NAME=NUMBER (e.g. gpu-starv.gap=1), got {text!r}")
    try:
        value = float(m.group(3))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number in {text!r}") from None
    # A whole number as an int, unless past 2**53 (1e308 would be echoed back in a message as 309 digits)
    return m.group(1), m.group(2), int(value) if value.is_integer() and abs(value) < 2**53 else value


def _trace_id(path: Path, cache=None) -> str:
    """The dashboard's id of a trace file (``app.trace_files.trace_id``: name@content hash), for links."""
    from dashboard.app.trace_files import trace_id

    return trace_id(path, cache)


def _add_cache_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the columnar trace cache")
    p.add_argument("--cache-dir", help="cache folder (default: $TRACEDASH_CACHE_DIR or the user cache folder)")


def _steps_value(text: str) -> str:
    """``--steps auto|PRESET|REGEX``, checked (an unknown preset or unusable rule is a usage error)."""
    from dashboard.analysis.step_presets import StepSourceError, parse_step_source

    if not text.strip():  # an empty value is a slip (a shell variable unset), not a request for auto
        raise argparse.ArgumentTypeError("is empty: give auto, a preset name or a regular expression")
    try:
        parse_step_source(text)
    except StepSourceError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


STEPS_HELP = (
    "where steps come from: auto (the preset whose annotations the trace holds), seed (CG_DISPATCH "
    "marks), vllm, sglang, trtllm, torch (ProfilerStep#N), or a regular expression with named groups "
    "(phase, context_requests, context_tokens, generation_requests, generation_tokens, tokens, "
    "batch_size, graph_mode, padded) for any other server (default: auto)"
)  # the groups are step_presets.RULE_GROUPS, written out: importing it here would import pandas for every command


SIZE_OPTIONS = ("--memory-limit", "--max-upload", "--upload-space", "--max-unzipped", "--upload-memory")


def _join_negative_sizes(argv: list[str]) -> list[str]:
    """``--memory-limit -1G`` -> ``--memory-limit=-1G``, so the size check ("not a size") answers,
    not argparse's "expected one argument" (it takes ``-1G`` for an option)."""
    import re

    out = []
    for arg in argv:
        if out and out[-1] in SIZE_OPTIONS and re.match(r"-[\d.]", arg):
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out
