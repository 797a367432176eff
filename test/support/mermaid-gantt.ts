// Reads the ```mermaid gantt blocks of a Markdown text back as Mermaid's gantt lexer and grammar
// would (mermaid-js/mermaid packages/mermaid/src/diagrams/gantt/parser/gantt.jison): statements
// one per line; `dateFormat`, `axisFormat`, `title`, `todayMarker` take the rest of the line up to
// '#' or ';'; `section <text>` has no ':'; a task is `<text> :<data>` where the text has none of
// '#', ':', ';' and does not start with a keyword (the lexer's rules are tried in order, so a
// keyword at the start of a line wins). Task data here is Mermaid's `[tags, ]<start>, <end>`
// (ganttDb.ts compileData) with `dateFormat x`: milliseconds since the epoch.

export interface GanttTaskRead {
  section: string;
  name: string;
  tags: string[];
  start: number;
  end: number;
}

export interface GanttRead {
  title: string;
  dateFormat: string;
  sections: string[];
  tasks: GanttTaskRead[];
}

const KEYWORD =
  /^(gantt|dateformat|inclusiveenddates|topaxis|axisformat|tickinterval|includes|excludes|todaymarker|weekday|title|accdescription|acctitle|accdescr|section|click|call|href|\d{4}-\d\d-\d\d)/i;
const TAGS = new Set(["active", "done", "crit", "milestone"]);

/** Every ```mermaid block of `markdown`. */
export function mermaidBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```mermaid\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
}

/** One gantt block read back; throws naming the first line Mermaid would not read as meant. */
export function readGantt(block: string): GanttRead {
  const lines = block.split("\n").map((l) => l.trim());
  if (lines[0] !== "gantt") throw new Error(`not a gantt diagram: ${lines[0]}`);
  const out: GanttRead = { title: "", dateFormat: "", sections: [], tasks: [] };
  for (const line of lines.slice(1)) {
    if (line === "") continue;
    const statement = /^(title|dateFormat|axisFormat|todayMarker|section)\s([^#\n;]+)$/.exec(line);
    if (statement) {
      const [, key, value] = statement;
      if (key === "title") out.title = value!;
      if (key === "dateFormat") out.dateFormat = value!;
      if (key === "section") {
        if (value!.includes(":")) throw new Error(`a section name with ':': ${line}`);
        out.sections.push(value!);
      }
      continue;
    }
    const task = /^([^#:\n;]+):([^#\n;]+)$/.exec(line);
    if (!task || KEYWORD.test(task[1]!.trim())) throw new Error(`not a task line: ${line}`);
    if (out.sections.length === 0) throw new Error(`a task before any section: ${line}`);
    const data = task[2]!.split(",").map((d) => d.trim());
    const tags = data.filter((d) => TAGS.has(d));
    const times = data.filter((d) => !TAGS.has(d));
    if (times.length !== 2 || !times.every((t) => /^\d+$/.test(t))) {
      throw new Error(`task data is not "<start>, <end>" in milliseconds: ${line}`);
    }
    const [start, end] = times.map(Number) as [number, number];
    if (end < start) throw new Error(`a task that ends before it starts: ${line}`);
    out.tasks.push({ section: out.sections.at(-1)!, name: task[1]!.trim(), tags, start, end });
  }
  if (out.dateFormat !== "x")
    throw new Error(`dateFormat is ${out.dateFormat || "missing"}, not x`);
  return out;
}
