"""Kernel short names: the function's own name, as nsys derives ``shortName``, and always short.

Kineto traces carry only the kernel's full name: demangled (``void at::native::elementwise_kernel<128,
4, F>(int, F)``), or mangled where it could not be demangled (``_ZN7ck_tile6kentryILi1E...``, cuDNN
kernels of over 1,600 characters). ``kernel_short_name`` takes the function's own name from either;
``kernel_short_names`` also cuts what is still longer than ``SHORT_NAME_MAX`` (``cut_name``; the full
name stays in ``name``, shown in the kernel table's tooltip), keeping different names different.
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["SHORT_NAME_MAX", "cut_name", "kernel_short_name", "kernel_short_names", "mangled_function_name"]

SHORT_NAME_MAX = 160  # characters; the longest plain kernel names seen (cuBLAS, TensorRT-LLM) fit
_CUT_HEAD, _CUT_TAIL = 112, 38  # a cut name keeps both ends (variants of a kernel often differ at the end)
ELLIPSIS = "…"

_CLONE_SUFFIX = re.compile(r"\s*\[clone [^\]]*\]\s*$")
_QUALIFIERS = (" const", " volatile", " noexcept", " &&", " &", "&&", "&")
_OPEN, _CLOSE = "(<{[", ")>}]"


def _top_level(s: str) -> tuple[list[tuple[int, int, str]], list[int]] | None:
    """Bracket groups at depth 0 (``(open index, close index, opener)``) and the positions just
    after each depth-0 separator (a space or ``::``) of a C++ name; None if the brackets do not
    balance. ``<``/``>`` inside parentheses are comparisons (``enable_if<((8)>(0))>``), not brackets."""
    groups, seps, stack = [], [], []
    i, n = 0, len(s)
    while i < n:
        ch = s[i]
        if ch in "({[" or (ch == "<" and (not stack or stack[-1][1] != "(")):
            stack.append((i, ch))
        elif ch in ")}]" or (ch == ">" and stack and stack[-1][1] == "<"):
            if not stack or _OPEN.index(stack[-1][1]) != _CLOSE.index(ch):
                return None
            start, opener = stack.pop()
            if not stack:
                groups.append((start, i, opener))
        elif not stack:
            if ch == " ":
                seps.append(i + 1)
            elif ch == ":" and s.startswith("::", i):
                seps.append(i + 2)
                i += 1
        i += 1
    return (groups, seps) if not stack else None


def kernel_short_name(name: str) -> str:
    """The short name of a kernel from its demangled (or mangled) name, as nsys derives ``shortName``:
    the function's own name, without return type, namespaces, template arguments and parameters.

    ``void at::native::elementwise_kernel<128, 4, F>(int, F)`` -> ``elementwise_kernel``;
    ``void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(...)`` ->
    ``multimem_all_reduce_kernel``; ``foo::operator()(int) const`` -> ``operator()``; a plain name
    (``ampere_sgemm_128x64_nn``) is itself. A name that is not valid C++ (unbalanced brackets) or
    would come out empty is returned unchanged; a mangled name (``_Z...``) gives its function's name
    (``mangled_function_name``) when it has one.
    """
    if name.startswith("_Z") and (fn := mangled_function_name(name)):
        return fn
    s = _CLONE_SUFFIX.sub("", name.strip())
    changed = True
    while changed:
        changed = False
        for q in _QUALIFIERS:
            if s.endswith(q) and len(s) > len(q):
                s, changed = s[: -len(q)].rstrip(), True
    parsed = _top_level(s)
    if parsed is None:
        return name
    groups, seps = parsed
    end = len(s)
    if (
        groups
        and groups[-1][2] == "("
        and groups[-1][1] == end - 1
        and groups[-1][0] > 0
        and not s[: groups[-1][0]].rstrip().endswith("operator")
    ):
        end = groups[-1][0]  # the parameter list
        groups = groups[:-1]
    head_end = len(s[:end].rstrip())
    if groups and groups[-1][2] == "<" and groups[-1][1] == head_end - 1 and groups[-1][0] > 0:
        head_end = groups[-1][0]  # the function's template arguments
    cut = max((p for p in seps if p <= head_end), default=0)
    short = s[cut:head_end].strip()
    return short or name


_LENGTH = re.compile(r"\d{1,9}")  # a longer length cannot be a real name (and int() of it could fail)


def mangled_function_name(name: str) -> str | None:
    """The function's own name from an Itanium-mangled name (``_ZN7ck_tile6kentryILi1E...Ev`` ->
    ``kentry``; ``_Z6squarePfi`` -> ``square``): the last source name of its (nested) name before the
    template arguments or the end of the name. None when ``name`` is not mangled that way or is cut
    short inside that part. A kernel is a free function (CUDA/HIP kernels cannot be class members),
    so the first template argument list closes the function's name."""
    if not name.startswith("_Z"):
        return None
    i, n = 2, len(name)
    if name.startswith("L", i):  # internal linkage
        i += 1
    nested = name.startswith("N", i)
    if nested:
        i += 1
        while i < n and name[i] in "rVKRO":  # cv- and ref-qualifiers of a member function
            i += 1
    last = None
    while i < n:
        if name[i].isdigit():
            digits = _LENGTH.match(name, i).group()
            i += len(digits)
            length = int(digits)
            if length == 0 or i + length > n:
                return None  # cut short inside the name
            last, i = name[i : i + length], i + length
            if not nested:
                break
        elif name.startswith("St", i) and last is None:  # std::
            i += 2
        elif name[i] == "S":  # a substitution: an earlier component stands here
            end = name.find("_", i)
            if end < 0:
                return None
            last, i = None, end + 1
        elif name[i] == "B" and last is not None and name[i + 1 : i + 2].isdigit():  # an ABI tag: B5cxx11
            digits = _LENGTH.match(name, i + 1).group()
            i += 1 + len(digits) + int(digits)
        else:  # template arguments (I), the end of the nested name (E), a constructor, an operator, ...
            break
    return last if last and not last.startswith("_GLOBAL__N") else None


def cut_name(name: str) -> str:
    """``name`` itself when it has at most ``SHORT_NAME_MAX`` characters, else its first
    ``_CUT_HEAD`` characters, "…", its last ``_CUT_TAIL`` and `` #`` with 7 hex digits of its hash:
    exactly ``SHORT_NAME_MAX`` characters. The hash keeps names whose ends agree apart (a short name
    groups the kernel statistics), and is the same in every trace (two runs compared still match)."""
    if len(name) <= SHORT_NAME_MAX:
        return name
    digest = hashlib.blake2s(name.encode("utf-8", "surrogatepass"), digest_size=4).hexdigest()[:7]
    return f"{name[:_CUT_HEAD]}{ELLIPSIS}{name[-_CUT_TAIL:]} #{digest}"


def kernel_short_names(names: list[str]) -> list[str]:
    """``cut_name(kernel_short_name(n))`` of each name: never longer than ``SHORT_NAME_MAX``."""
    return [cut_name(kernel_short_name(n)) for n in names]
