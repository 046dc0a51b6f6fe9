"""Per hot loop, the innermost loop with the most vector instructions: its instructions, vector and
scalar floating-point instructions, and vector stores, from `objdump -d --no-show-raw-insn` listings of
tools/loop_probe.c compiled for each target (docs/design.md, "On aarch64"):

    gcc -O3 -msse2 -Iinclude -c tools/loop_probe.c -o x86.o && objdump -d --no-show-raw-insn x86.o > x86.s
    (in an arm64 root, tools/check_aarch64.sh's:) the same with gcc and clang -> gcc.s, clang.s
    python tools/loop_census.py x86.s:x86 gcc.s:arm clang.s:arm
"""
import collections
import re
import sys

FILES = [(a.split(":")[0], a.split(":")[1] == "arm") for a in sys.argv[1:]]
def parse(path):
    funcs = collections.OrderedDict(); cur = None
    for line in open(path):
        m = re.match(r'^([0-9a-f]+) <([^>]+)>:', line)
        if m: cur = m.group(2); funcs[cur] = []; continue
        m = re.match(r'^\s+([0-9a-f]+):\s+(\S+)\s*(.*)$', line)
        if m and cur: funcs[cur].append((int(m.group(1), 16), m.group(2), m.group(3)))
    return funcs
def loops(ins, arm):
    out = []
    for i, (a, op, args) in enumerate(ins):
        if (arm and (op.startswith('b.') or op in ('b', 'cbnz', 'cbz', 'tbnz', 'tbz'))) or (not arm and op.startswith('j')):
            m = re.match(r'([0-9a-f]+)', args.split(',')[-1].strip())
            if m:
                t = int(m.group(1), 16)
                if t <= a: out.append((t, a))
    inner = [l for l in out if not any(o != l and l[0] <= o[0] and o[1] <= l[1] for o in out)]
    return inner
def classify(op, args, arm):
    if arm:
        vec = bool(re.search(r'\bv\d+\.|\bq\d+\b', args))
        fp = op.startswith('f') or (op in ('ldr', 'str', 'ldp', 'stp') and re.search(r'\b[sd]\d+\b', args))
        scal = (not vec) and bool(re.search(r'\b[sd]\d+\b', args)) and bool(fp)
        st = op.startswith('st') and vec
        return vec, scal, st
    vec = bool(re.search(r'ps\b|pd\b|^p[a-z]+|movdq|movap|movup', op)) and 'xmm' in args
    scal = bool(re.search(r'ss$|sd$', op)) and 'xmm' in args
    st = op.startswith('mov') and vec and re.search(r'%xmm\d+,\s*-?(0x)?[0-9a-f]*\(', args) is not None
    return vec, scal, st
print('| loop | ' + ' | '.join(p for p, _ in FILES) + ' |')
print('|---' * (len(FILES) + 1) + '|')
res = {}
for path, arm in FILES:
    f = parse(path)
    for name, ins in f.items():
        best = None
        for (t, b) in loops(ins, arm):
            body = [x for x in ins if t <= x[0] <= b]
            c = [classify(op, args, arm) for _, op, args in body]
            v = sum(x[0] for x in c); s = sum(x[1] for x in c); st = sum(1 for x in c if x[2])
            if best is None or v > best[1]: best = (len(body), v, s, st)
        if best: res.setdefault(name, {})[path] = best
for name in ['pk_add_f32', 'w_gather', 'pk_tiles_k2_f32', 'w_rows', 'pk_narrow_strip', 'w_nhwc', 'w_max32', 'w_max64', 'pk_zero']:
    cells = []
    for path, _ in FILES:
        r = res.get(name, {}).get(path)
        cells.append('-' if r is None else f'{r[0]} insns: {r[1]} vector, {r[2]} scalar FP, {r[3]} vector stores')
    print(f'| {name} | ' + ' | '.join(cells) + ' |')
