"""`torch.utils.cpp_extension.load_inline` and `load` built in seconds, with the Python API a candidate expects.

`install()` routes torch's JIT builds (both calls end in `cpp_extension._jit_compile`) through `build`:
- a CUDA source is split (kforge/cuda_split.py): the host part compiled by the C++ compiler from a precompiled
  torch/extension.h (`build_pch`, once per machine and optimisation level), or from the smaller light set first
  where the sources include nothing more of torch (LIGHT_INCLUDES), the device part by nvcc without torch's
  headers; the C++ sources (load_inline's main.cpp) from the same precompiled header; all in parallel, then linked
  with torch's own flags (taken from the ninja file torch itself writes for the build);
- the library is kept under the build folder by a SHA-256 of its sources, flags and compilers, so the same
  candidate built again (its prebuild, then its turn on the GPU) is imported, not compiled;
- where the split is refused, or a part fails for a name or overload the split may have left out of it, torch
  builds it as it always does; an error the source alone explains (syntax, types) is answered at once; compiler
  errors come back trimmed to the error lines, naming the source's file and lines (#line marks in the parts);
- a build that failed in the source's lines is remembered in the build folder, so the candidate's turn on the GPU
  does not build it again.

`python -m kforge.extension_build --pch DIR` builds the precompiled headers (trusted: torch's headers only; about
800 and 550 MB a level); candidates find them through $KFORGE_TORCH_PCH."""
import argparse
import contextlib
import fcntl
import hashlib
import inspect
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from kforge.cuda_split import NotSplittable, blank_literals, split_cuda_source

PCH_ENV = "KFORGE_TORCH_PCH"
PCH_HEADER = "torch_extension.h"
# The light set: what a load_inline unit's bindings and a kernel launcher's host code use of torch (the tensor API
# and its factories, the Python bindings of tensors, TORCH_CHECK, the current stream). GCC instantiates at the end
# of every unit what a header's inline functions leave pending, precompiled header or not: an empty unit costs 8.1 s
# with torch/extension.h precompiled and 4.8 s with this set (the CI machine's cores), nearly all of a launcher's
# compile. A unit whose sources include no other torch header is compiled with it first; where a name is then
# missing (the source uses what only the whole header declares), with torch/extension.h.
LIGHT_HEADER = "torch_light.h"
LIGHT_INCLUDES = ("torch/types.h", "torch/csrc/utils/pybind.h", "torch/csrc/Exceptions.h", "ATen/cuda/CUDAContext.h")
PCH_HEADERS = {PCH_HEADER: "#include <torch/extension.h>\n", LIGHT_HEADER: "".join(f"#include <{h}>\n" for h in LIGHT_INCLUDES)}
# The optimisation levels a precompiled header is built for: GCC refuses one built at another level (__OPTIMIZE__,
# __NO_INLINE__ differ) and compiles from the headers instead, correct but slow.
PCH_LEVELS = {"O0": [], "O2": ["-O2"]}
SPLIT_VERSION = 6  # bump when what the split or the build makes changes: the cache key holds it
CUDA_SUFFIXES = (".cu", ".cuh")
# nvcc flags that also shape the host part's code (the rest, e.g. --use_fast_math, -arch, -Xptxas, are the device's)
HOST_FLAG = re.compile(r"^(-O\d?|-Os|-D.+|-U.+|-I.+|-std=.+|-g\d?|-f(?!tz=|mad=|ast).+|-w|-W.+)$")
# nvcc options whose next argument is for one of its own tools, never for the host compiler
NVCC_TOOL_OPTIONS = {"-Xptxas", "-Xnvlink", "-Xcudafe", "-Xcicc", "-Xfatbin", "-Xarchive", "--ptxas-options",
                     "--nvlink-options", "-maxrregcount", "-arch", "-code", "-gencode", "--generate-code"}
REFUSED_CUDA_FLAGS = re.compile(r"^(-rdc|--relocatable-device-code|-dc$|--device-c$|-dlink|--device-link|-x$)")

# A compiler's error at a line of a file (GCC's file:line:col, nvcc's file(line)), and every line of a build's log
# worth keeping.
SOURCE_LINE_ERROR = re.compile(r":\d+(:\d+)?: (fatal )?error|\(\d+\): (catastrophic )?error")
COMPILER_ERROR = re.compile(SOURCE_LINE_ERROR.pattern + r"|undefined reference|multiple definition|ld returned|"
                            r"error detected in the compilation")

BUILDS = []  # what each build in this process did: {"name", "how", "s", "why"}; a candidate's report carries it


class SplitBuildFailed(Exception):
    """The split build's compiler or linker failed: torch builds the sources its own way."""


class LightUnitFailed(Exception):
    """The light unit missed a name the whole torch/extension.h declares: build with that instead."""


class JoinedUnitFailed(Exception):
    """The unit of load_inline's main.cpp and a host part failed to compile: built again with the two apart."""


class SourceError(Exception):
    """A compiler error the source explains (in a source compiled as torch would, load_inline's main.cpp, or in a
    part at the source's own lines, no name missing): torch's own build would fail on it the same way, so it is
    the answer, not a reason to build again."""


def install() -> None:
    """torch's JIT builds (load_inline, load) go through `build` from now on in this process."""
    import torch.utils.cpp_extension as ce
    if getattr(ce._jit_compile, "kforge", False):
        return
    original = ce._jit_compile
    signature = inspect.signature(original)

    def jit_compile(*args, **kwargs):
        a = signature.bind(*args, **kwargs)
        a.apply_defaults()
        return build(dict(a.arguments), lambda: original(*args, **kwargs))

    jit_compile.kforge = True
    ce._jit_compile = jit_compile


def build(a: dict, torch_build):
    """A module for _jit_compile's arguments `a`: the split build, or `torch_build()` where it cannot be used. A
    build that failed in the source's own lines fails again at once with the same message (the candidate's turn
    on the GPU repeats its prebuild's build)."""
    t0 = time.perf_counter()
    name = a["name"]
    memo = _failure_memo(a)
    if memo is not None and memo.is_file():
        BUILDS.append({"name": name, "how": "failed before", "s": round(time.perf_counter() - t0, 3)})
        raise RuntimeError(memo.read_text())
    try:
        module, how = _split_build(a)
        BUILDS.append({"name": name, "how": how, "s": round(time.perf_counter() - t0, 3)})
        return module
    except SourceError as e:
        BUILDS.append({"name": name, "how": "split (failed)", "s": round(time.perf_counter() - t0, 3)})
        raise RuntimeError(_remember(memo, str(e))) from None
    except (NotSplittable, SplitBuildFailed, OSError) as e:
        why = f"{type(e).__name__}: {e}"
    t1 = time.perf_counter()
    try:
        module = torch_build()
    except Exception as e:  # noqa: BLE001 -- torch's build error, trimmed, same type
        BUILDS.append({"name": name, "how": "torch (failed)", "s": round(time.perf_counter() - t0, 3), "why": why[:300]})
        if not str(e).startswith("Error building extension"):
            raise
        raise RuntimeError(_remember(memo, trim_build_error(str(e), name))) from None  # torch raises RuntimeError
    BUILDS.append({"name": name, "how": "torch", "s": round(time.perf_counter() - t1, 3), "why": why[:300]})
    return module


def _failure_memo(a: dict) -> Path | None:
    """Where a failed build of exactly these sources and arguments is remembered: beside the builds, in the
    build folder (a candidate's own), named by a SHA-256 of the sources' bytes, torch's build arguments, torch
    and Python; None where the sources cannot be read."""
    try:
        sources = [Path(s).read_bytes() for s in a.get("sources") or []]
    except OSError:
        return None
    import torch
    arguments = {k: v for k, v in a.items() if isinstance(v, (str, int, float, bool, list, type(None))) and k != "verbose"}
    key = hashlib.sha256(json.dumps({"v": SPLIT_VERSION, "sources": [hashlib.sha256(b).hexdigest() for b in sources],
                                     "headers": local_headers(a.get("sources") or [], a.get("extra_include_paths") or []),
                                     "arguments": arguments, "torch": torch.__version__, "py": sys.version},
                                    sort_keys=True, default=str).encode()).hexdigest()
    return Path(a["build_directory"]) / f"kforge-{key[:24]}.error"


LOCAL_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def local_headers(sources: list, include_paths: list, limit: int = 256) -> dict:
    """SHA-256 of every header the sources include with quotes ("x.cuh"), found as the compilers find them (beside
    the including file, then in the extra include paths), and of the headers those include in turn: a build's key
    holds what it reads besides torch's and the system's headers (<...>), so a header edited since is a new build."""
    seen, queue = {}, [Path(s) for s in sources]
    while queue and len(seen) < limit:
        including = queue.pop()
        try:
            text = including.read_text(errors="replace")
        except OSError:
            continue
        for name in LOCAL_INCLUDE.findall(blank_comments(text)):
            for folder in [including.parent, *map(Path, include_paths)]:
                header = (folder / name).resolve()
                if header.is_file():
                    if str(header) not in seen:
                        seen[str(header)] = hashlib.sha256(header.read_bytes()).hexdigest()
                        queue.append(header)
                    break
    return seen


def blank_comments(text: str) -> str:
    """`text` without its comments (a commented-out #include reads nothing)."""
    return re.sub(r"/\*.*?\*/|//[^\n]*", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)


def _remember(memo: Path | None, message: str) -> str:
    """`message`, kept at `memo` where the compiler placed it in the source's lines (file:line: error): what the
    machine caused (a fork refused, a compiler killed) names no line and is tried again next time."""
    if memo is not None and SOURCE_LINE_ERROR.search(message):
        with contextlib.suppress(OSError):
            memo.parent.mkdir(parents=True, exist_ok=True)
            memo.write_text(message)
    return message





def trim_build_error(log: str, name: str, max_lines: int = 30) -> str:
    """A build's output cut to the compiler's error lines (with the source line each quotes), each naming its
    file without the build folder."""
    lines = log.splitlines()
    keep = []
    for i, line in enumerate(lines):
        if not COMPILER_ERROR.search(line):
            continue
        keep.append(re.sub(r"(?<![\w.])/[^\s\"']*/([\w.-]+\.(cu|cpp|cc|cxx|cuh|h|hpp)\b)", r"\1", line.strip()))
        following = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if following and not COMPILER_ERROR.search(following) and not re.match(r"(\[\d+/\d+\]|FAILED|ninja)", following):
            keep.append("    " + following)
    if not keep:
        keep = [line for line in lines if line.strip()][-max_lines:]
    more = len(keep) - max_lines
    text = "\n".join(keep[:max_lines]) + (f"\n... {more} more lines" if more > 0 else "")
    return f"Error building extension '{name}':\n{text}"


def _optimisation(flags: list) -> str | None:
    """Which precompiled header a compile with `flags` can use (GCC's rule: the same optimisation macros)."""
    level = "O0"
    for f in flags:
        if re.fullmatch(r"-O[0-9]?", f):
            level = "O0" if f in ("-O0",) else "O2"
        elif f in ("-Os", "-Oz", "-Og", "-Ofast"):
            level = None
    return level


def _pch_include(flags: list, name: str = PCH_HEADER) -> list:
    root = os.environ.get(PCH_ENV)
    level = _optimisation(flags)
    if not root or level is None:
        return []
    header = Path(root) / level / name
    # -Winvalid-pch says when GCC reads the headers instead; never an error, even under a candidate's -Werror
    return ["-include", str(header), "-Winvalid-pch", "-Wno-error=invalid-pch"] \
        if (header.parent / (name + ".gch")).is_file() else []


def _ninja_variables(a: dict, sources: list, folder: str) -> dict:
    """The compilers and flags torch would build with: the variables of the ninja file it writes for this build."""
    import torch.utils.cpp_extension as ce
    values = {"path": os.path.join(folder, "build.ninja"), "name": a["name"], "sources": sources,
              "extra_cflags": a.get("extra_cflags") or [], "extra_cuda_cflags": a.get("extra_cuda_cflags") or [],
              "extra_sycl_cflags": a.get("extra_sycl_cflags") or [], "extra_ldflags": a.get("extra_ldflags") or [],
              "extra_include_paths": a.get("extra_include_paths") or [], "with_cuda": a["with_cuda"],
              "with_sycl": False, "is_standalone": False, "verbose": False}
    # as torch's _write_ninja_file_and_build_library: the link flags prepared (torch's libraries), then the file
    values["extra_ldflags"] = _call_by_name(ce._prepare_ldflags, values)
    _call_by_name(ce._write_ninja_file_to_build_library, values)
    variables = {}
    for line in Path(values["path"]).read_text().splitlines():
        m = re.match(r"^(\w+) = (.*)$", line)
        if m:
            variables[m.group(1)] = shlex.split(m.group(2))
    return variables


def _call_by_name(function, values: dict):
    """`function` called with the entries of `values` its parameters name (torch's private helpers gain and lose
    parameters between versions); one it names that `values` lacks means this torch is not understood here."""
    wants = inspect.signature(function).parameters
    missing = [p for p in wants if p not in values]
    if missing:
        raise SplitBuildFailed(f"torch's {function.__name__} takes {missing}, unknown here")
    return function(**{p: values[p] for p in wants})


def _tool_versions(variables: dict) -> list:
    out = []
    for tool in ("cxx", "nvcc"):
        if variables.get(tool):
            out.append(_version_of(tuple(variables[tool])))
    return out


_VERSIONS = {}


def _version_of(cmd: tuple) -> str:
    if cmd not in _VERSIONS:
        r = subprocess.run([*cmd, "--version"], capture_output=True, text=True)
        _VERSIONS[cmd] = r.stdout.strip()
    return _VERSIONS[cmd]


def _host_flags(variables: dict, extra_cflags: list, extra_cuda_cflags: list) -> list:
    """The C++ flags of a .cu file's host part: torch's C++ flags, less the user's C++ ones, plus those of its
    CUDA flags that shape host code (as nvcc would pass them to its host compiler)."""
    flags = list(variables.get("cflags", []))
    for f in reversed(extra_cflags):
        if f in flags:
            del flags[len(flags) - 1 - flags[::-1].index(f)]
    cuda = list(extra_cuda_cflags)
    i = 0
    while i < len(cuda):
        f = cuda[i]
        if f in ("-Xcompiler", "--compiler-options") and i + 1 < len(cuda):
            flags += [x for x in cuda[i + 1].split(",") if x]
            i += 2
            continue
        if f in NVCC_TOOL_OPTIONS:
            i += 2
            continue
        m = re.match(r"^(-Xcompiler|--compiler-options)=(.*)$", f)
        if m:
            flags += [x for x in m.group(2).split(",") if x]
        elif HOST_FLAG.match(f):
            flags.append(f)
        i += 1
    return flags


def _split_build(a: dict):
    import torch.utils.cpp_extension as ce
    if a.get("is_standalone") or not a.get("is_python_module", True) or a.get("with_sycl"):
        raise NotSplittable("not a Python module build")
    sources = [os.path.abspath(s) for s in a["sources"]]
    if not sources:
        raise NotSplittable("no sources")
    if any(not s.endswith((".cpp", ".cc", ".cxx", ".cu")) for s in sources):
        raise NotSplittable("a source that is neither C++ nor CUDA")
    if a.get("with_cuda") is None:
        a["with_cuda"] = any(s.endswith(CUDA_SUFFIXES) for s in sources)
    cuda_flags = [f.strip() for f in a.get("extra_cuda_cflags") or []]
    refused = [f for f in cuda_flags if REFUSED_CUDA_FLAGS.match(f)]
    if refused:
        raise NotSplittable(f"relocatable device code ({refused[0]})")
    build_dir = a["build_directory"]
    os.makedirs(build_dir, exist_ok=True)  # as torch's own build makes it
    name = a["name"]
    raw = {s: Path(s).read_bytes() for s in sources}
    texts = {s: b.decode(errors="replace") for s, b in raw.items()}
    splits = {s: split_cuda_source(t, s) for s, t in texts.items() if s.endswith(".cu")}
    with tempfile.TemporaryDirectory(dir=build_dir, prefix=".kforge-") as tmp:
        variables = _ninja_variables(a, sources, tmp)
        host_flags = _host_flags(variables, [f.strip() for f in a.get("extra_cflags") or []], cuda_flags)
        key = hashlib.sha256(json.dumps({
            "v": SPLIT_VERSION, "name": name, "sources": [hashlib.sha256(raw[s]).hexdigest() for s in sources],
            "headers": local_headers(sources, a.get("extra_include_paths") or []),
            "parts": [[splits[s].host, splits[s].device] for s in sources if s in splits],  # what the split made
            "vars": variables,
            "host": host_flags, "tools": _tool_versions(variables), "py": sys.version,
        }, sort_keys=True).encode()).hexdigest()
        final = Path(build_dir) / f"kforge-{key[:24]}"
        if (final / f"{name}.so").is_file():
            return ce._import_module_from_library(name, str(final), True), "cached"
        joined = _joinable(sources, texts, splits)
        built = Path(tmp) / "out"
        # One unit where load_inline's main.cpp can join a host part, with the light headers where its sources ask
        # for nothing more; the whole header where a name is missing then; apart where the joined unit fails.
        light = _light_texts(texts[joined[0]], splits[joined[1]].host) if joined else None
        queue = [("light", joined)] * bool(light) + [("one", joined)] * bool(joined) + [("apart", None)]
        while True:
            how, unit = queue.pop(0)
            try:
                unused = _compile_and_link(name, sources, texts, splits, variables, host_flags, unit, Path(tmp) / how,
                                           built, light if how == "light" else None)
                break
            except LightUnitFailed:  # a name only the whole header declares: that header next
                shutil.rmtree(built, ignore_errors=True)
            except JoinedUnitFailed:  # the joining itself may be the cause: apart
                shutil.rmtree(built, ignore_errors=True)
                queue = [q for q in queue if q[0] == "apart"]
        with contextlib.suppress(OSError):  # another process may have built it first: either is the same library
            os.rename(built, final)
    pch = "no precompiled header" if not _pch_include(host_flags) else \
        f"precompiled header not used: {unused[0]}" if unused else "precompiled header"
    unit = {"light": ", one unit, light headers", "one": ", one unit"}.get(how, "")
    return ce._import_module_from_library(name, str(final), True), f"split ({pch}{unit})"


# Errors a part could meet for what the split left out of it (the host part has no kernels' bodies and, compiled
# by g++ alone, none of what CUDA's headers declare under __CUDACC__, such as half-precision operators; the device
# part no torch): a name not found, an overload not found. GCC's wording, then nvcc's (EDG).
MISSING_NAME = re.compile(r"(was not declared in this scope|is not a member of|does not name a (type|template)|"
                          r"has not been declared|is not a namespace|no matching function|no match for|no member named|"
                          r"is undefined|has no member|is not a template|must be a class or namespace name|"
                          r"no instance of|not a class or struct|incomplete type)")


def _the_sources_own(log: str) -> bool:
    """Whether a part's compile failed in a way the source alone explains: compiler errors at lines of it, none of
    them a name or overload not found (which the split may have caused by what it left out: torch then builds the
    source whole, a minute, and its error is the answer). Syntax and type errors in the source's own code are the
    same in its parts, so they are answered at once."""
    errors = [line for line in log.splitlines() if COMPILER_ERROR.search(line)]
    return bool(errors) and not any(MISSING_NAME.search(line) or "undefined reference" in line for line in errors)


# load_inline's main.cpp: torch's include, the candidate's cpp_sources, then the bindings torch writes for `functions`
MAIN_INCLUDE = "#include <torch/extension.h>\n"
MAIN_BINDINGS = re.compile(r"\nPYBIND11_MODULE\(TORCH_EXTENSION_NAME, m\) \{\n(m\.def\([^\n]*\);\n)*\}\s*$")


def _joinable(sources: list, texts: dict, splits: dict) -> tuple | None:
    """(main.cpp, the CUDA source) where load_inline's main.cpp may be compiled in one unit before that source's
    host part, else None. Every unit that includes torch/extension.h pays GCC's instantiation of what the headers
    leave pending (nearly all of a host compile, precompiled header or not), so one unit instead of two halves a
    candidate's compile work. Joined only where main.cpp holds declarations and bindings alone (no directive,
    definition, using or namespace): nothing that could change what the host part after them means."""
    cu = [s for s in sources if s in splits and splits[s].host.strip()]
    main = [s for s in sources if s not in splits and Path(s).name == "main.cpp"]
    if len(sources) != 2 or len(cu) != 1 or len(main) != 1 or not texts[main[0]].startswith(MAIN_INCLUDE):
        return None
    body = blank_literals(texts[main[0]])[len(MAIN_INCLUDE):]
    bindings = MAIN_BINDINGS.search(body)
    declarations = body[:bindings.start()] if bindings else body
    if re.search(r"[#{}]|\busing\b|\bnamespace\b", declarations):
        return None
    return main[0], cu[0]


TORCH_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*[<\"](torch/[^>\"]*)[>\"]", re.M)
EXTENSION_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*[<\"]torch/extension\.h[>\"][^\n]*$", re.M)


def _light_texts(main: str, host: str) -> tuple | None:
    """main.cpp and a host part with their torch/extension.h includes blanked (the unit gets the light set in their
    place: LIGHT_HEADER), where they include no other torch header but torch/types.h; else None."""
    if any(h not in ("torch/extension.h", "torch/types.h") for h in TORCH_INCLUDE.findall(main + "\n" + host)):
        return None
    return EXTENSION_INCLUDE.sub("", main), EXTENSION_INCLUDE.sub("", host)


def _compile_and_link(name, sources, texts, splits, variables, host_flags, joined, folder: Path, built: Path,
                      light: tuple | None = None) -> list:
    """Every source compiled in `folder` (main.cpp at the head of the CUDA source's host part where `joined`; with
    `light`, _light_texts' (main.cpp, host part), that unit from the light headers), in parallel, and linked into
    built/<name>.so. Returns the reasons GCC gave for a precompiled header not used."""
    folder.mkdir()
    tmp = str(folder)
    unit_include = _pch_include(host_flags)
    if light:
        unit_include = _pch_include(host_flags, LIGHT_HEADER)
        if not unit_include:  # no precompiled light set: the headers themselves
            (folder / LIGHT_HEADER).write_text(PCH_HEADERS[LIGHT_HEADER])
            unit_include = ["-include", str(folder / LIGHT_HEADER)]
    cxx, nvcc = variables.get("cxx", ["c++"]), variables.get("nvcc", ["nvcc"])
    cuda_cflags = [*variables.get("cuda_cflags", [])]

    def compile_source(i, s):
        """The objects of source `s`, and per object (result, verbatim): a CUDA source's host part first where
        its device part must instantiate what the host part uses."""
        stem = Path(tmp) / f"{i}_{Path(s).stem}"
        if s not in splits:
            cflags = variables.get("cflags", [])
            obj = f"{stem}.o"
            r = _run([*cxx, *cflags, *_pch_include(cflags), "-c", s, "-o", obj, *variables.get("post_cflags", [])], tmp)
            # load_inline's main.cpp begins with torch/extension.h: the precompiled header changes nothing
            return [(obj, r, Path(s).name == "main.cpp" and texts[s].startswith(MAIN_INCLUDE))]
        split = splits[s]
        host, device = Path(f"{stem}.host.cpp"), Path(f"{stem}.device.cu")
        parts[str(host)] = parts[str(device)] = s
        # joined: main.cpp first, then the host part, each numbered as its own file (the part's #line marks name
        # the source's lines)
        main_text, host_text = light or (texts[joined[0]] if joined else "", split.host)
        host.write_text(f'#line 1 "{joined[0]}"\n' + main_text + f'\n#line 1 "{host.name}"\n' + host_text
                        if joined else host_text)
        # its "x.cuh" includes, found where the source lies (nvcc has no -iquote: -I there)
        folder = str(Path(s).parent)
        host_job = lambda: _run([*cxx, *host_flags, *unit_include, "-iquote", folder, "-c", str(host),
                                 "-o", f"{host}.o"], tmp)
        device_job = lambda text: (device.write_text(text),
                                   _run([*nvcc, *cuda_cflags, "-I", folder, "-c", str(device), "-o", f"{device}.o",
                                         *variables.get("cuda_post_cflags", [])], tmp))[1]
        if not split.device.strip():
            return [(f"{host}.o", host_job(), False)]
        if not split.templates:
            with ThreadPoolExecutor(max_workers=2) as pair:
                h, d = pair.submit(host_job), pair.submit(device_job, split.device)
                return [(f"{host}.o", h.result(), False), (f"{device}.o", d.result(), False)]
        h = host_job()
        if h.returncode != 0:
            return [(f"{host}.o", h, False)]
        needed = _run(["nm", "-C", "-u", f"{host}.o"], tmp).stdout.splitlines()
        needed = [line.strip()[2:] if line.strip().startswith("U ") else line.strip() for line in needed]
        return [(f"{host}.o", h, False), (f"{device}.o", device_job(split.device_with(needed)), False)]

    parts = {}  # each part's file: the source it came from, which its errors name
    units = [(i, s) for i, s in enumerate(sources) if not joined or s != joined[0]]
    with ThreadPoolExecutor(max_workers=len(units)) as pool:
        done = [o for per_source in pool.map(lambda a: compile_source(*a), units) for o in per_source]
    objects = [obj for obj, _, _ in done]
    results = [r for _, r, _ in done]
    failed = [(obj, r, v) for obj, r, v in done if r.returncode != 0]
    if joined and any(obj.endswith(".host.cpp.o") for obj, _, _ in failed):
        log = "".join(r.stderr + r.stdout for obj, r, _ in failed if obj.endswith(".host.cpp.o"))
        if light and any(MISSING_NAME.search(line) for line in log.splitlines() if COMPILER_ERROR.search(line)):
            raise LightUnitFailed()
        raise JoinedUnitFailed()  # its error may be the joining's (a name declared in both): the device part's is not
    if failed:
        _, r, v = failed[0]
        log = r.stderr + r.stdout
        for part, source in parts.items():
            log = log.replace(part, source).replace(Path(part).name, Path(source).name)
        raise (SourceError if v or _the_sources_own(log) else SplitBuildFailed)(trim_build_error(log, name))
    unused = [m.group(1) for r in results for m in [re.search(r"not used because (.*)", r.stderr)] if m]
    built.mkdir()
    r = _run([*cxx, *objects, *variables.get("ldflags", []), "-o", str(built / f"{name}.so")], tmp)
    if r.returncode != 0:
        if light:  # an undefined reference: what the light set declares but the whole header defines inline
            raise LightUnitFailed()
        if joined:
            raise JoinedUnitFailed()
        raise SplitBuildFailed(trim_build_error(r.stderr + r.stdout, name))
    return unused


def _run(cmd: list, cwd: str) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)


def torch_cxx_flags() -> tuple:
    """The compiler and flags torch builds a CUDA extension's C++ with, less the module's name."""
    arch = os.environ.get("TORCH_CUDA_ARCH_LIST")
    try:  # the architectures shape only nvcc's flags; without a GPU torch would have none to take
        os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
        with tempfile.TemporaryDirectory() as tmp:
            variables = _ninja_variables({"name": "kforge_pch", "with_cuda": True}, [os.path.join(tmp, "x.cu")], tmp)
    finally:
        if arch is None:
            os.environ.pop("TORCH_CUDA_ARCH_LIST", None)
    flags = [f for f in variables.get("cflags", []) if not f.startswith("-DTORCH_EXTENSION_NAME=")]
    return variables.get("cxx", ["c++"]), flags


def build_pch(root: str) -> dict:
    """The precompiled headers of each level under `root`, torch/extension.h and the light set (built where missing
    or made by another compiler or torch; a lock keeps concurrent callers to one build). Returns {level: "built" |
    "kept"}."""
    import torch
    Path(root).mkdir(parents=True, exist_ok=True)
    with open(Path(root) / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        header = Path(torch.__file__).parent / "include/torch/extension.h"
        cxx, torch_flags = torch_cxx_flags()  # once, before the levels' threads (it sets the environment)

        def signature(level):
            return json.dumps({"cmd": [*cxx, *torch_flags, *PCH_LEVELS[level]], "tool": _version_of(tuple(cxx)),
                               "torch": torch.__version__, "header": os.path.getmtime(header), "headers": PCH_HEADERS})

        def kept(level):
            folder = Path(root) / level
            return (folder / "signature.json").is_file() and (folder / "signature.json").read_text() == signature(level) \
                and all((folder / (h + ".gch")).is_file() for h in PCH_HEADERS)

        def one(level, name):
            folder = Path(root) / level
            (folder / name).write_text(PCH_HEADERS[name])
            r = subprocess.run([*cxx, "-x", "c++-header", *torch_flags, *PCH_LEVELS[level], str(folder / name), "-o",
                                str(folder / (name + ".gch.tmp"))], capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"precompiling {name} failed:\n{(r.stderr + r.stdout)[-2000:]}")
            os.rename(folder / (name + ".gch.tmp"), folder / (name + ".gch"))

        stale = [level for level in PCH_LEVELS if not kept(level)]
        for level in stale:
            shutil.rmtree(Path(root) / level, ignore_errors=True)
            (Path(root) / level).mkdir()
        jobs = [(level, name) for level in stale for name in PCH_HEADERS]
        # GCC holds ~1.5-2.5 GB a header: no more at once than the machine has cores
        with ThreadPoolExecutor(max_workers=max(min(len(jobs), os.cpu_count() or 1), 1)) as pool:
            list(pool.map(lambda job: one(*job), jobs))
        for level in stale:
            (Path(root) / level / "signature.json").write_text(signature(level))
    return {level: "built" if level in stale else "kept" for level in PCH_LEVELS}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kforge.extension_build", description=__doc__.split("\n")[0])
    parser.add_argument("--pch", metavar="DIR", required=True, help="build the precompiled headers under DIR")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    print(json.dumps({"pch": build_pch(args.pch), "s": round(time.perf_counter() - t0, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
