// A Mermaid Gantt chart of phases over time, for the job summary (GitHub renders ```mermaid
// blocks in Markdown). Pure: text in, text out. The syntax is Mermaid's gantt grammar
// (mermaid-js/mermaid packages/mermaid/src/diagrams/gantt/parser/gantt.jison): a task line is
// `<text> :<data>`, its text may hold no '#', ':', ';' or new line, and a line whose text starts
// with a keyword (section, title, click, ...) is read as that keyword; the data here is
// `[crit, ]<start>, <end>` with both times in `dateFormat x` (milliseconds since the epoch).

export interface GanttTask {
  name: string;
  /** Milliseconds since the epoch. */
  startedAt: number;
  ms: number;
  failed?: boolean;
}

export interface GanttSection {
  name: string;
  tasks: GanttTask[];
}

/** Words the gantt lexer reads as statements when a line starts with them (case-insensitive). */
const KEYWORDS =
  /^(gantt|dateformat|inclusiveenddates|topaxis|axisformat|tickinterval|includes|excludes|todaymarker|weekday|title|accdescription|acctitle|accdescr|section|click|call|href|\d{4}-\d\d-\d\d)/i;

/** Text Mermaid reads back as the same plain text on one line. */
function label(text: string): string {
  const plain = text
    .replace(/[#:;%\s]+/g, " ")
    // Anything else that is not a printable character goes too (control and format characters).
    .replace(/[^\p{L}\p{N}\p{P}\p{S} ]/gu, "")
    .trim();
  if (plain === "") return "-";
  return KEYWORDS.test(plain) ? `- ${plain}` : plain;
}

/** The chart as a fenced ```mermaid block; empty when there is nothing to draw. */
export function ganttChart(title: string, sections: readonly GanttSection[]): string {
  const drawn = sections.filter((s) => s.tasks.length > 0);
  if (drawn.length === 0) return "";
  const lines = [
    "```mermaid",
    "gantt",
    `  title ${label(title)}`,
    "  dateFormat x",
    "  axisFormat %H:%M:%S",
    // Drawn later than the run, "today" would stretch the axis to the reader's now.
    "  todayMarker off",
  ];
  for (const section of drawn) {
    lines.push(`  section ${label(section.name)}`);
    for (const t of section.tasks) {
      const start = Math.round(t.startedAt);
      const end = Math.max(start, Math.round(t.startedAt + t.ms));
      lines.push(`    ${label(t.name)} :${t.failed ? "crit, " : ""}${start}, ${end}`);
    }
  }
  lines.push("```");
  return `${lines.join("\n")}\n`;
}
