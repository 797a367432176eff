// The unified diff `kubeadm upgrade diff` prints: github.com/pmezard/go-difflib (difflib.go), a
// port of Python's difflib — SequenceMatcher with autojunk (elements of more than 1% + 1 of a
// 200+ line B are "popular" and never start a match), grouped opcodes with `context` lines, and
// WriteUnifiedDiff's headers and ranges. Ported here so the hunks are the ones kubeadm prints,
// not those of another diff algorithm.

interface Match {
  a: number;
  b: number;
  size: number;
}

export type Tag = "r" | "d" | "i" | "e";

export interface OpCode {
  tag: Tag;
  i1: number;
  i2: number;
  j1: number;
  j2: number;
}

export class SequenceMatcher {
  private readonly b2j = new Map<string, number[]>();

  constructor(
    private readonly a: readonly string[],
    private readonly b: readonly string[],
  ) {
    // chainB: index every element of b, then purge the popular ones (autoJunk).
    b.forEach((line, i) => {
      const list = this.b2j.get(line);
      if (list) list.push(i);
      else this.b2j.set(line, [i]);
    });
    const n = b.length;
    if (n >= 200) {
      const ntest = Math.floor(n / 100) + 1;
      for (const [line, indices] of [...this.b2j]) {
        if (indices.length > ntest) this.b2j.delete(line);
      }
    }
  }

  private findLongestMatch(alo: number, ahi: number, blo: number, bhi: number): Match {
    const { a, b } = this;
    let besti = alo;
    let bestj = blo;
    let bestsize = 0;
    let j2len = new Map<number, number>();
    for (let i = alo; i < ahi; i++) {
      const next = new Map<number, number>();
      for (const j of this.b2j.get(a[i]!) ?? []) {
        if (j < blo) continue;
        if (j >= bhi) break;
        const k = (j2len.get(j - 1) ?? 0) + 1;
        next.set(j, k);
        if (k > bestsize) {
          besti = i - k + 1;
          bestj = j - k + 1;
          bestsize = k;
        }
      }
      j2len = next;
    }
    // No junk set (isjunk is nil): extend over equal elements, popular ones included.
    while (besti > alo && bestj > blo && a[besti - 1] === b[bestj - 1]) {
      besti--;
      bestj--;
      bestsize++;
    }
    while (
      besti + bestsize < ahi &&
      bestj + bestsize < bhi &&
      a[besti + bestsize] === b[bestj + bestsize]
    ) {
      bestsize++;
    }
    return { a: besti, b: bestj, size: bestsize };
  }

  private matchingBlocks(): Match[] {
    const matched: Match[] = [];
    const walk = (alo: number, ahi: number, blo: number, bhi: number) => {
      const m = this.findLongestMatch(alo, ahi, blo, bhi);
      if (m.size === 0) return;
      if (alo < m.a && blo < m.b) walk(alo, m.a, blo, m.b);
      matched.push(m);
      if (m.a + m.size < ahi && m.b + m.size < bhi) walk(m.a + m.size, ahi, m.b + m.size, bhi);
    };
    walk(0, this.a.length, 0, this.b.length);
    const out: Match[] = [];
    let cur: Match = { a: 0, b: 0, size: 0 };
    for (const m of matched) {
      if (cur.a + cur.size === m.a && cur.b + cur.size === m.b) {
        cur = { ...cur, size: cur.size + m.size };
      } else {
        if (cur.size > 0) out.push(cur);
        cur = m;
      }
    }
    if (cur.size > 0) out.push(cur);
    out.push({ a: this.a.length, b: this.b.length, size: 0 });
    return out;
  }

  opCodes(): OpCode[] {
    const codes: OpCode[] = [];
    let i = 0;
    let j = 0;
    for (const m of this.matchingBlocks()) {
      const tag: Tag | undefined =
        i < m.a && j < m.b ? "r" : i < m.a ? "d" : j < m.b ? "i" : undefined;
      if (tag) codes.push({ tag, i1: i, i2: m.a, j1: j, j2: m.b });
      i = m.a + m.size;
      j = m.b + m.size;
      if (m.size > 0) codes.push({ tag: "e", i1: m.a, i2: i, j1: m.b, j2: j });
    }
    return codes;
  }

  groupedOpCodes(n: number): OpCode[][] {
    let codes = this.opCodes();
    if (codes.length === 0) codes = [{ tag: "e", i1: 0, i2: 1, j1: 0, j2: 1 }];
    const first = codes[0]!;
    if (first.tag === "e") {
      codes[0] = {
        ...first,
        i1: Math.max(first.i1, first.i2 - n),
        j1: Math.max(first.j1, first.j2 - n),
      };
    }
    const last = codes[codes.length - 1]!;
    if (last.tag === "e") {
      codes[codes.length - 1] = {
        ...last,
        i2: Math.min(last.i2, last.i1 + n),
        j2: Math.min(last.j2, last.j1 + n),
      };
    }
    const nn = n + n;
    const groups: OpCode[][] = [];
    let group: OpCode[] = [];
    for (const c of codes) {
      let { i1, j1 } = c;
      if (c.tag === "e" && c.i2 - c.i1 > nn) {
        group.push({ tag: "e", i1, i2: Math.min(c.i2, i1 + n), j1, j2: Math.min(c.j2, j1 + n) });
        groups.push(group);
        group = [];
        i1 = Math.max(i1, c.i2 - n);
        j1 = Math.max(j1, c.j2 - n);
      }
      group.push({ tag: c.tag, i1, i2: c.i2, j1, j2: c.j2 });
    }
    if (group.length > 0 && !(group.length === 1 && group[0]!.tag === "e")) groups.push(group);
    return groups;
  }
}

/** difflib.SplitLines: every line keeps its "\n", and the last one gets one more. */
export function splitLines(text: string): string[] {
  // strings.SplitAfter keeps an empty last element after a final "\n"; JS's split drops it.
  const lines = text.split(/(?<=\n)/);
  if (text.endsWith("\n")) lines.push("");
  lines[lines.length - 1] += "\n";
  return lines;
}

/** formatRangeUnified: "3" for one line, "2,0" for none (the line before), else "3,4". */
function formatRange(start: number, stop: number): string {
  let beginning = start + 1;
  const length = stop - start;
  if (length === 1) return String(beginning);
  if (length === 0) beginning--;
  return `${beginning},${length}`;
}

/** WriteUnifiedDiff: nothing at all when the two texts are equal. */
export function unifiedDiff(opts: {
  a: readonly string[];
  b: readonly string[];
  fromFile: string;
  toFile: string;
  context: number;
}): string {
  const { a, b } = opts;
  let out = "";
  let started = false;
  for (const g of new SequenceMatcher(a, b).groupedOpCodes(opts.context)) {
    if (!started) {
      started = true;
      out += `--- ${opts.fromFile}\n+++ ${opts.toFile}\n`;
    }
    const first = g[0]!;
    const last = g[g.length - 1]!;
    out += `@@ -${formatRange(first.i1, last.i2)} +${formatRange(first.j1, last.j2)} @@\n`;
    for (const c of g) {
      if (c.tag === "e") {
        for (const line of a.slice(c.i1, c.i2)) out += ` ${line}`;
        continue;
      }
      if (c.tag === "r" || c.tag === "d") for (const line of a.slice(c.i1, c.i2)) out += `-${line}`;
      if (c.tag === "r" || c.tag === "i") for (const line of b.slice(c.j1, c.j2)) out += `+${line}`;
    }
  }
  return out;
}
