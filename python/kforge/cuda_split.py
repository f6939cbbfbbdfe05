"""A CUDA extension source split in two translation units: the host part (torch's headers, the functions Python
calls, kernel launches) for the C++ compiler, which reads torch's headers from a precompiled header, and the
device part (kernels, device functions, the types and constants they use) for nvcc, which never sees torch.

Why: nvcc has no precompiled headers, and a `load_inline` source includes torch's (about 350k lines after the
preprocessor) in each of its three front-end passes: ~50 s a candidate, nearly all of it spent on headers that the
kernels never use. Split, the same source builds in seconds (kforge/extension_build.py).

The split is by text, not by a compiler, so it is refused (`NotSplittable`, naming why) for what it cannot place
with certainty: device variables the host code names (cudaMemcpyToSymbol), kernels in anonymous namespaces,
launches it cannot parse. A refused or failed split builds the way torch does; a split changes no code, only where
it is compiled: a kernel launch `k<<<g, b, s, st>>>(args)` becomes what nvcc itself makes of it,
`(__cudaPushCallConfiguration(g, b, s, st) ? (void)0 : k(args))`, a call of the host stub nvcc emits for `k`. A
template kernel's host stub has internal linkage (nvcc's choice), so its launches `k<T><<<...>>>(args)` call a
launcher, `__kforge_launch_k<T>(g, b, s, st, args)`, a host function template defined beside the kernel in the
device part and instantiated there for the arguments the compiled host part asks for (`Split.device_with`)."""
import re
from dataclasses import dataclass, field

# Headers only the host part may include: the device part is compiled without torch's include paths in mind.
HOST_ONLY_INCLUDE = re.compile(r'#\s*include\s*[<"](torch/|ATen/|c10/|pybind11/|Python\.h|caffe2/)')
# Names that make a declaration host-only: torch's, pybind's and Python's.
HOST_NAMESPACES = re.compile(r"\b(torch|at|c10|pybind11|py|caffe2)\s*::|\bnamespace\s+(torch|at|c10|pybind11|py)\b|"
                             r"\b(PyObject|TORCH_CHECK|AT_DISPATCH\w*|PYBIND11_MODULE|TORCH_LIBRARY\w*)\b")
# torch's 16-bit float types are usable in kernels through two light headers (no ATen): the device part
# includes them where it names them, and a declaration naming only them is no reason to keep it host-side.
HALF_TYPES = re.compile(r"\b(at|c10)\s*::\s*(Half|BFloat16)\b")
HALF_PRELUDE = ("#include <c10/util/Half.h>\n#include <c10/util/BFloat16.h>\n"
                "namespace at { using ::c10::Half; using ::c10::BFloat16; }\n")
NVCC_MACROS = {"__CUDACC__", "__NVCC__", "__CUDACC_VER_MAJOR__", "__CUDACC_VER_MINOR__", "__CUDACC_VER_BUILD__",
               "__CUDA_ARCH_LIST__", "__CUDACC_RDC__", "__CUDACC_EWP__", "__CUDACC_RELAXED_CONSTEXPR__",
               "__CUDACC_EXTENDED_LAMBDA__", "__CUDACC_DEBUG__"}
# What torch's headers give a .cu file's device code under nvcc: the device part, without them, includes these.
DEVICE_PRELUDE = ("#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <cfloat>\n#include <climits>\n"
                  "#include <cstdint>\n")
DEVICE_QUALIFIERS = {"__device__", "__constant__", "__shared__", "__managed__"}
LAUNCH_PUSH = "__cudaPushCallConfiguration"
# A template kernel's launcher: a host function template beside the kernel in the device part, instantiated there
# for the template arguments the host part asks for (nvcc gives a template kernel's own host stub internal linkage).
LAUNCHER = "__kforge_launch_"
PUSH_DECLARATION = f'extern "C" unsigned {LAUNCH_PUSH}(dim3, dim3, size_t, struct CUstream_st*);\n'
# What nvcc's host pass has and the C++ compiler lacks: cuda_runtime.h declares its kernel-taking templates under
# __CUDACC__ only (thin casts to the runtime's `const void*` functions), and CUDA's headers give host code min and max.
HOST_PRELUDE = """#include <algorithm>
template <class T> static inline cudaError_t cudaFuncSetAttribute(T* f, cudaFuncAttribute a, int v) {
  return ::cudaFuncSetAttribute((const void*)f, a, v); }
template <class T> static inline cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* a, T* f) {
  return ::cudaFuncGetAttributes(a, (const void*)f); }
using std::min;
using std::max;
"""


class NotSplittable(Exception):
    """The source is one the split cannot place with certainty; the message says what."""


@dataclass
class Split:
    host: str
    device: str
    kernels: list = field(default_factory=list)
    templates: list = field(default_factory=list)  # template kernels, launched through LAUNCHER + name

    def device_with(self, needed: list) -> str:
        """The device part with the template launchers the host part uses instantiated: `needed` are the host
        part's undefined symbols, demangled (`void __kforge_launch_k<float>(dim3, dim3, unsigned long, ...)`),
        each a valid declarator for an explicit instantiation."""
        text = self.device + "".join(f"template {n};\n" for n in needed if LAUNCHER in n and n.startswith("void "))
        return (HALF_PRELUDE + text) if HALF_TYPES.search(blank_literals(text)) and HALF_PRELUDE not in text else text


def blank_literals(text: str) -> str:
    """`text` with comments, string and character literals replaced by spaces (lengths and newlines kept), so that
    braces, semicolons and keywords are found only in code."""
    out = list(text)
    i, n = 0, len(text)

    def blank(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blank(i, j)
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.compile(r'R"([^()\\ ]{0,16})\(').match(text, i)
            if not m:
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', m.end())
            j = n if end < 0 else end + len(m.group(1)) + 2
            blank(i + 1, j)
            i = j
        elif c in "\"'":
            if c == "'" and i + 1 < n and text[i + 1].isalnum() and _in_number(text, i):
                i += 1  # a digit separator (1'000), not a character literal
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            blank(i + 1, min(j, n))
            i = j + 1
        else:
            i += 1
    return "".join(out)


def _in_number(text: str, at: int) -> bool:
    """Whether the word that ends just before `at` is a number (so a quote there separates its digits)."""
    start = at
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_'."):
        start -= 1
    return start < at and text[start].isdigit()


@dataclass
class Item:
    text: str   # as written
    code: str   # literals blanked
    directive: bool = False
    block: str = ""  # "namespace" or "extern" for a block whose body is split in turn
    line: int = 1    # the source's line where `text` begins


def _items(text: str, first_line: int = 1) -> list:
    """The top-level items of `text` (whose first line is the source's `first_line`): preprocessor lines,
    declarations ending with `;`, function definitions, namespace and extern "C" blocks."""
    code = blank_literals(text)
    items, start, depth, paren, i, n = [], 0, 0, 0, 0, len(text)

    def emit(end, **kw):
        nonlocal start
        if text[start:end].strip():
            at = start + len(text[start:end]) - len(text[start:end].lstrip())  # from its first character
            items.append(Item(text[at:end], code[at:end], line=first_line + text.count("\n", 0, at), **kw))
        start = end

    while i < n:
        c = code[i]
        if c == "#" and depth == 0 and not code[start:i].strip():
            emit(i)
            j = i
            while True:  # to the end of the line, continuations included
                k = code.find("\n", j)
                if k < 0:
                    j = n
                    break
                if code[k - 1] == "\\":
                    j = k + 1
                    continue
                j = k + 1
                break
            emit(j, directive=True)
            i = j
            continue
        if c == "(":
            paren += 1
        elif c == ")":
            paren -= 1
        elif c == "{":
            if depth == 0:
                head = code[start:i].strip()
                if re.match(r"(inline\s+)?namespace\b", head) or re.match(r'extern\s*"\s*"$', head):
                    # the body is split on its own (a namespace's kernels, declarations and host code alike)
                    close = _matching(code, i, "{", "}")
                    items.append(Item(text[start:close + 1], code[start:close + 1],
                                      block="namespace" if "namespace" in head else "extern",
                                      line=first_line + text.count("\n", 0, start)))
                    start = i = close + 1
                    continue
            depth += 1
        elif c == "}":
            depth -= 1
            if depth < 0:
                raise NotSplittable("unbalanced braces")
            if depth == 0 and paren == 0 and _ends_with_body(code[start:i + 1]):
                emit(i + 1)
        elif c == ";" and depth == 0 and paren == 0:
            emit(i + 1)
        i += 1
    if depth != 0 or paren != 0:
        raise NotSplittable("unbalanced braces or parentheses")
    emit(n)
    return items


def _matching(code: str, at: int, open_: str, close: str) -> int:
    depth = 0
    for j in range(at, len(code)):
        if code[j] == open_:
            depth += 1
        elif code[j] == close:
            depth -= 1
            if depth == 0:
                return j
    raise NotSplittable(f"no '{close}' matches the '{open_}' at offset {at}")


def _ends_with_body(code: str) -> bool:
    """Whether a top-level `}` ends this item (a function's body) or the item goes on to a `;` (a class, an enum,
    an initializer, a lambda)."""
    # a template's header is dropped first: its default arguments' '=' is no initializer
    head = _after_template_header(code[:code.find("{")]).strip()
    if re.match(r"(typedef\s+)?(struct|class|union|enum)\b", head):
        return False
    if "(" not in head:
        return False
    # An '=' outside parentheses and angle brackets is an initializer (`auto f = [](...) {...};`); an operator's
    # name (`operator+=`) and comparisons (`enable_if_t<N == 4>`) are not.
    head = re.sub(r"\boperator\s*[^\s(]+", "operator", head)
    head = re.sub(r"==|!=|<=|>=", " ", head)
    depth = 0
    for ch in head:
        depth += ch in "(<"
        depth -= ch in ")>"
        if ch == "=" and depth == 0:
            return False
    return True


def _tokens(code: str) -> set:
    return set(re.findall(r"[A-Za-z_]\w*", code))


ATTRIBUTES = {"__launch_bounds__", "__attribute__", "__align__", "alignas", "__declspec", "__cluster_dims__",
              "__maxnreg__", "decltype", "sizeof"}


def _declared_name(code: str) -> str:
    """The name a declaration declares: the identifier before its parameter list, or before `[`, `=`, `{`, `;`
    (attributes such as `__launch_bounds__(256)` skipped)."""
    for m in re.finditer(r"([A-Za-z_]\w*)\s*(\(|\[|=|\{|;)", code):
        if m.group(1) not in ATTRIBUTES:
            return m.group(1)
    raise NotSplittable("a declaration whose name cannot be found: " + " ".join(code.split())[:80])


def _kernel_declaration(item: Item) -> str:
    """A kernel's host-side declaration: its signature without body or CUDA attributes. nvcc's host stub for the
    kernel is a function of this name and signature (hidden visibility, external linkage, so the library's other
    translation units reach it)."""
    code = item.code
    body = code.find("{")
    end = body if body >= 0 else code.rfind(";")
    head = item.text[:end]
    while m := re.search(r"__launch_bounds__\s*\(", head):  # with its balanced parentheses
        head = head[:m.start()] + head[_matching(head, m.end() - 1, "(", ")") + 1:]
    head = re.sub(r"\b(__global__|static|__noinline__|__forceinline__|inline)\b", "", head)
    return head.strip() + ";\n"


def _template_parts(item: Item, name: str):
    """A template kernel's `template <...>` header, its parameter list as written, and its parameters' names."""
    code = item.code
    t = re.search(r"\btemplate\s*<", code)
    close = _matching_angle(code, t.end() - 1)
    header = item.text[t.start():close + 1]
    open_ = re.search(r"\b" + re.escape(name) + r"\s*\(", code[close:])
    if not open_:
        raise NotSplittable(f"template kernel '{name}' whose parameters cannot be found")
    start = close + open_.end() - 1
    end = _matching(code, start, "(", ")")
    params = item.text[start + 1:end].strip()
    names = []
    for p in _split_top_level(params, code[start + 1:end].strip()) if params and params != "void" else []:
        p = re.sub(r"=.*$", "", p, flags=re.S).strip()
        p = re.sub(r"\[[^\]]*\]\s*$", "", p).strip()
        m = re.search(r"([A-Za-z_]\w*)$", p)
        if not m or m.group(1) in {"int", "float", "double", "char", "long", "short", "bool", "unsigned", "__restrict__"} \
                or p == m.group(1):
            raise NotSplittable(f"template kernel '{name}' has an unnamed parameter ({p})")
        names.append(m.group(1))
    return header, params, names


def _template_names(header: str) -> list:
    """The names a `template <...>` header declares: `template <typename T, int B = 4>` -> [T, B]."""
    inner = header[header.index("<") + 1:header.rindex(">")]
    out = []
    for part in _split_top_level(inner, blank_literals(inner)):
        part = re.sub(r"=.*$", "", part, flags=re.S).strip()
        m = re.search(r"([A-Za-z_]\w*)\s*$", part)
        if not m or "..." in part:  # a pack: its expansion is not written here
            raise NotSplittable(f"template parameters not understood: {header}")
        out.append(m.group(1))
    return out


def _matching_angle(code: str, at: int) -> int:
    """The `>` closing the `<` at `at` (parentheses skipped, so `(a > b)` in a default argument does not close)."""
    depth, paren = 0, 0
    for j in range(at, len(code)):
        ch = code[j]
        paren += ch == "("
        paren -= ch == ")"
        if paren:
            continue
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
            if depth == 0:
                return j
    raise NotSplittable("a template header whose '>' cannot be found")


def _external(item: Item) -> str:
    """A kernel without `static` before its body: its host stub must be reachable from the host part."""
    body = item.code.find("{")
    end = body if body >= 0 else len(item.text)
    return re.sub(r"\bstatic\b", "", item.text[:end]) + item.text[end:]


def _rewrite_launches(text: str, code: str, kernels: set, templates: set) -> str:
    """Each `name<<<config>>>(args)` as nvcc lowers it: the configuration pushed, then the host stub called; a
    template kernel's `name<args><<<config>>>(args)` as a call of its launcher."""
    out, at = [], 0
    for m in re.finditer(r"<<<", code):
        if m.start() < at:
            continue
        before = code[:m.start()].rstrip()
        targs_at = None
        if before.endswith(">"):  # explicit template arguments
            depth = 0
            for j in range(len(before) - 1, -1, -1):
                depth += before[j] == ">"
                depth -= before[j] == "<"
                if depth == 0:
                    targs_at = j
                    break
            if targs_at is None:
                raise NotSplittable("a kernel launch whose template arguments cannot be read")
            before = before[:targs_at].rstrip()
        name_m = re.search(r"([A-Za-z_][\w:]*)$", before)
        if not name_m:
            raise NotSplittable("a kernel launch whose kernel is not a plain name")
        name = name_m.group(1).split("::")[-1]
        if targs_at is not None and name not in templates:
            raise NotSplittable(f"a launch of '{name}' with template arguments, which is not a template kernel here")
        if name not in kernels:
            raise NotSplittable(f"launch of '{name}', which is not a kernel of this source")
        close = code.find(">>>", m.end())
        if close < 0:
            raise NotSplittable("a '<<<' without its '>>>'")
        config = _split_top_level(text[m.end():close], code[m.end():close])
        if not 2 <= len(config) <= 4:
            raise NotSplittable(f"a launch of '{name}' with {len(config)} configuration arguments")
        config += ["0"] * (4 - len(config))
        open_paren = close + 3
        while open_paren < len(code) and code[open_paren].isspace():
            open_paren += 1
        if open_paren >= len(code) or code[open_paren] != "(":
            raise NotSplittable(f"a launch of '{name}' without its arguments")
        end = _matching(code, open_paren, "(", ")")
        callee = text[name_m.start():name_m.end()]
        out.append(text[at:name_m.start()])
        if name in templates:
            qualifier = callee[:len(callee) - len(name)]
            targs = text[targs_at:m.start()].strip() if targs_at is not None else ""
            args = text[open_paren + 1:end].strip()
            out.append(f"{qualifier}{LAUNCHER}{name}{targs}({', '.join(config)}{', ' if args else ''}{args})")
        else:
            out.append(f"({LAUNCH_PUSH}({', '.join(config)}) ? (void)0 : {callee}{text[open_paren:end + 1]})")
        at = end + 1
    out.append(text[at:])
    return "".join(out)


def _split_top_level(text: str, code: str) -> list:
    parts, depth, start = [], 0, 0
    for j, ch in enumerate(code):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            parts.append(text[start:j].strip())
            start = j + 1
    parts.append(text[start:].strip())
    return [p for p in parts if p] if any(parts) else []


def split_cuda_source(source: str, path: str = "") -> Split:
    """The host and device translation units of one CUDA source; raises NotSplittable where it cannot be sure.
    Given the source's `path`, each item of a part is preceded by a #line naming the source's file and line, so
    that a compiler's errors point into the source, not into the part."""
    host, device, kernels, device_names, templates = [], [], [], set(), []
    _place(_items(source), host, device, kernels, device_names, templates, path)
    kernel_set = set(kernels)
    both = [k for k in set(templates) if kernels.count(k) > templates.count(k) or templates.count(k) > 1]
    if both:  # overloads across templates: the launcher would change which one a launch picks
        raise NotSplittable(f"kernel '{both[0]}' is both a template and an overload of it, or two templates")
    host_text = "".join(host)
    host_code = blank_literals(host_text)
    # nvcc's host pass defines these, g++ does not: host code that asks for them would take another branch
    asked = _tokens(host_code) & NVCC_MACROS
    if asked:
        raise NotSplittable(f"host code asks for {sorted(asked)[0]} (defined by nvcc, not by the C++ compiler)")
    clash = (_tokens(host_code) & device_names) - kernel_set
    if clash:
        raise NotSplittable(f"host code names device-only {', '.join(sorted(clash))} (a symbol copied to or from the "
                            "device, or a device function called from the host)")
    if "<<<" in host_code:
        host_text = _rewrite_launches(host_text, host_code, kernel_set, set(templates))
    device_text = DEVICE_PRELUDE + "".join(device)
    if HALF_TYPES.search(blank_literals(device_text)):
        device_text = HALF_PRELUDE + device_text
    # nvcc includes cuda_runtime.h in every .cu file; the host part, compiled as C++, needs it said (and dim3)
    return Split(host="#include <cuda_runtime.h>\n" + HOST_PRELUDE + (PUSH_DECLARATION if kernels else "") + host_text,
                 device=device_text, kernels=kernels, templates=templates)


def _place(items, host, device, kernels, device_names, templates, path=""):
    for it in items:
        if path:  # `#line N "file"`: the next line is the source's line N
            host.append(f'#line {it.line} "{path}"\n')
            device.append(f'#line {it.line} "{path}"\n')
        if it.directive:
            line = ("" if path else "\n") + it.text.strip() + "\n"  # on a line of its own
            if HOST_ONLY_INCLUDE.match(it.text.strip()):
                host.append(line)
            elif not re.match(r"#\s*pragma\s+once", it.text.strip()):
                host.append(line)
                device.append(line)
            continue
        if it.block:
            brace = it.code.find("{")
            head, body = it.text[:brace + 1], it.text[brace + 1:it.text.rfind("}")]
            h, d, inner = [head + ("\n" if path else "")], [head + ("\n" if path else "")], []
            _place(_items(body, it.line + it.text.count("\n", 0, brace + 1)), h, d, inner, device_names, templates, path)
            if inner and re.match(r"(inline\s+)?namespace\s*\{", it.code.strip()):
                raise NotSplittable("kernels in an anonymous namespace (internal linkage: another translation "
                                    "unit cannot launch them)")
            kernels.extend(inner)
            host.extend(h + ["}\n"])
            device.extend(d + ["}\n"])
            continue
        if re.search(r"^\s*#\s*(define|undef)\b", it.code, re.M):
            raise NotSplittable("a #define or #undef inside a declaration (it would reach one part only)")
        words = _tokens(it.code)
        if "__global__" in words and "template" in words:
            after = _after_template_header(it.code)
            if after is it.code:
                raise NotSplittable("a template kernel whose template header cannot be read")
            name = _declared_name(after)
            kernels.append(name)
            templates.append(name)
            header, params, names = _template_parts(it, name)
            device.append(_external(it) + "\n")
            if "{" in it.code:  # a definition: its launcher beside it
                device.append(f"{header}\nvoid {LAUNCHER}{name}(dim3 kf_grid, dim3 kf_block, size_t kf_shared, "
                              f"cudaStream_t kf_stream{', ' if params else ''}{params}) {{\n"
                              f"  {name}<{', '.join(_template_names(header))}><<<kf_grid, kf_block, kf_shared, kf_stream>>>"
                              f"({', '.join(names)});\n}}\n")
            host.append(f"{header}\nvoid {LAUNCHER}{name}(dim3, dim3, size_t, cudaStream_t{', ' if params else ''}{params});\n")
        elif "__global__" in words:
            name = _declared_name(it.code)
            kernels.append(name)
            device.append(_external(it) + "\n")
            host.append(_kernel_declaration(it))
        elif words & DEVICE_QUALIFIERS and "__host__" not in words:
            device_names.add(_declared_name(_after_template_header(it.code)))
            device.append(it.text + "\n")
        elif "__host__" in words:
            host.append(it.text + "\n")
            device.append(_internal(it) + "\n")
        elif not HOST_NAMESPACES.search(HALF_TYPES.sub("", it.code)) and _is_shared_declaration(it.code):
            host.append(it.text + "\n")
            device.append(it.text + "\n")
        else:
            host.append(it.text + "\n")


def _is_shared_declaration(code: str) -> bool:
    """Types, aliases, compile-time constants and plain constants: what a kernel may use as well as the host.
    Judged by the declaration's head: a host function whose body holds `constexpr` is the host's alone."""
    brace = code.find("{")
    head = _after_template_header(code if brace < 0 else code[:brace])
    words = _tokens(head)
    if words & {"struct", "class", "union", "enum", "typedef", "using"}:
        return True
    if "(" in head:  # a function: shared only if constexpr (implicitly inline, no symbol clash)
        return "constexpr" in words
    return bool(words & {"const", "constexpr"})


def _after_template_header(code: str) -> str:
    """`code` after its leading `template <...>` header (`code` itself where it has none)."""
    t = re.match(r"\s*template\s*<", code)
    return code[_matching_angle(code, t.end() - 1) + 1:] if t else code


def _internal(item: Item) -> str:
    """A host-and-device function's copy for the device part: `static` where it could clash at link time with the
    host part's copy (a plain, non-inline, non-template definition)."""
    head = item.code[:item.code.find("{")] if "{" in item.code else item.code
    words = _tokens(head)
    if "{" not in item.code or words & {"static", "inline", "__forceinline__", "constexpr", "template", "extern"}:
        return item.text
    return "static " + item.text.lstrip()
