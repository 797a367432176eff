import {
  SCALAR_STYLE,
  type ScalarLayout,
  type ScalarStyle,
  type ScalarStyleRule,
  type Schema,
} from "js-yaml";

// How Kubernetes' serializer (sigs.k8s.io/yaml over its go-yaml v2.4 fork) writes a string, so
// files read like kubeadm's: encode.go stringv asks for a literal block when the string has a
// line break, a double-quoted scalar when a plain one would resolve to another type (`"true"`,
// `"0"`, `""`), and plain otherwise; emitterc.go then falls back from plain to single quotes
// when the text cannot be plain (`'::'`, `'[fd00::10]:6443'`), and from single quotes or a
// literal block to double quotes when those cannot hold it either.

// encode.go isBase60Float: quoted on the way out although go-yaml reads it as a string.
const BASE60_FLOAT = /^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$/;
// resolve.go parseTimestamp: time.Parse with 2006-1-2T15:4:5.999999999Z07:00 (T or t),
// 2006-1-2 15:4:5.999999999 and 2006-1-2; Parse also takes a comma before the fraction.
const TIMESTAMP =
  /^(\d{4})-(\d{1,2})-(\d{1,2})(?:(?:([Tt])|( ))(\d{1,2}):(\d{1,2}):(\d{1,2})(?:[.,]\d+)?(Z|[+-]\d{2}:\d{2})?)?$/;

/** Whether Go's time.Parse accepts `text` in one of go-yaml's timestamp layouts. */
export function isGoTimestamp(text: string): boolean {
  const m = TIMESTAMP.exec(text);
  if (!m) return false;
  const [year, month, day] = [m[1], m[2], m[3]].map(Number) as [number, number, number];
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth) return false;
  if (m[6] === undefined) return true;
  // The T layout needs a zone, the space layout has none.
  if ((m[4] !== undefined) !== (m[9] !== undefined)) return false;
  const [hour, minute, second] = [m[6], m[7], m[8]].map(Number) as [number, number, number];
  if (hour > 23 || minute > 59 || second > 59) return false;
  const zone = /^[+-](\d{2}):(\d{2})$/.exec(m[9] ?? "");
  return !zone || (Number(zone[1]) <= 24 && Number(zone[2]) <= 60);
}

/**
 * Whether go-yaml would read `text`, written plain, as something other than a string: what
 * `schema` (Kubernetes' reading rules) resolves to another type, plus timestamps and base-60
 * numbers, which go-yaml reads back as strings yet quotes.
 */
export function goResolvesAsNonString(text: string, schema: Schema): boolean {
  if (BASE60_FLOAT.test(text) || isGoTimestamp(text)) return true;
  return schema.resolveImplicitScalarTag(text).tag !== schema.defaultScalarTag;
}

/** What emitterc.go yaml_emitter_analyze_scalar allows for a scalar in block context. */
interface Allowed {
  plain: boolean;
  singleQuoted: boolean;
  block: boolean;
}

const INDICATOR_FIRST = new Set([..."#,[]{}&*!|>'\"%@`"]);
const BREAKS = new Set(["\r", "\n", "\u0085", "\u2028", "\u2029"]);

/** go-yaml's is_printable, by code point: no tab, nothing past U+FFFF. */
function isPrintable(cp: number): boolean {
  return (
    cp === 0x0a ||
    (cp >= 0x20 && cp <= 0x7e) ||
    (cp >= 0xa0 && cp <= 0xd7ff) ||
    (cp >= 0xe000 && cp <= 0xfffd && cp !== 0xfeff)
  );
}

function analyze(value: string): Allowed {
  if (value === "") return { plain: true, singleQuoted: true, block: false };
  const chars = [...value];
  let blockIndicators = value.startsWith("---") || value.startsWith("...");
  let special = false;
  let [leadingSpace, leadingBreak, trailingSpace, trailingBreak] = [false, false, false, false];
  let [breakSpace, spaceBreak, lineBreaks] = [false, false, false];
  let [previousSpace, previousBreak, precededByWhitespace] = [false, false, true];
  chars.forEach((c, i) => {
    const next = chars[i + 1];
    const followedByWhitespace = next === undefined || next === " " || next === "\t";
    if (i === 0) {
      if (INDICATOR_FIRST.has(c)) blockIndicators = true;
      else if ((c === "?" || c === ":" || c === "-") && followedByWhitespace)
        blockIndicators = true;
    } else if ((c === ":" && followedByWhitespace) || (c === "#" && precededByWhitespace)) {
      blockIndicators = true;
    }
    if (!isPrintable(c.codePointAt(0)!)) special = true;
    const last = i === chars.length - 1;
    if (c === " ") {
      leadingSpace ||= i === 0;
      trailingSpace ||= last;
      breakSpace ||= previousBreak;
      [previousSpace, previousBreak] = [true, false];
    } else if (BREAKS.has(c)) {
      lineBreaks = true;
      leadingBreak ||= i === 0;
      trailingBreak ||= last;
      spaceBreak ||= previousSpace;
      [previousSpace, previousBreak] = [false, true];
    } else [previousSpace, previousBreak] = [false, false];
    precededByWhitespace = c === " " || c === "\t" || c === "\0" || BREAKS.has(c);
  });
  const edges = leadingSpace || leadingBreak || trailingSpace || trailingBreak;
  return {
    plain: !(edges || breakSpace || spaceBreak || special || lineBreaks || blockIndicators),
    singleQuoted: !(breakSpace || spaceBreak || special),
    block: !(trailingSpace || spaceBreak || special),
  };
}

const has = (layout: ScalarLayout, style: ScalarStyle) =>
  (layout.allowedStylesMask & (1 << style)) !== 0;

/**
 * A js-yaml scalar style rule styling strings as go-yaml does, `schema` being the rules
 * Kubernetes reads plain scalars with. Where js-yaml finds go-yaml's choice unsafe for a YAML
 * 1.1 reader (`=`, `<<`), the next style go-yaml would fall back to is used.
 */
export function goStringStyle(schema: Schema): ScalarStyleRule {
  return (layout) => {
    if (layout.node.tag !== "tag:yaml.org,2002:str" || layout.node.tagged) return;
    const value = layout.node.value;
    const allowed = analyze(value);
    const pick = (style: ScalarStyle) =>
      (layout.style = has(layout, style) ? style : SCALAR_STYLE.DOUBLE_QUOTED);
    if (value.includes("\n")) {
      const literal = allowed.block && !layout.isKey && !layout.flowOnly;
      pick(literal ? SCALAR_STYLE.LITERAL_BLOCK : SCALAR_STYLE.DOUBLE_QUOTED);
    } else if (value === "" || goResolvesAsNonString(value, schema)) {
      pick(SCALAR_STYLE.DOUBLE_QUOTED);
    } else if (allowed.plain) {
      pick(SCALAR_STYLE.PLAIN);
      if (layout.style === SCALAR_STYLE.DOUBLE_QUOTED && allowed.singleQuoted)
        pick(SCALAR_STYLE.SINGLE_QUOTED);
    } else {
      pick(allowed.singleQuoted ? SCALAR_STYLE.SINGLE_QUOTED : SCALAR_STYLE.DOUBLE_QUOTED);
    }
  };
}

/** Unicode letters and decimal digits, as Go's unicode.IsLetter and unicode.IsDigit. */
const LETTER = /^\p{L}$/u;
const DIGIT = /^\p{Nd}$/u;

/**
 * Map key order of go-yaml v2.4's sorter.go keyList.Less for string keys (every key is a
 * string once sigs.k8s.io/yaml has been through JSON): letters by code point, a non-letter
 * before a letter, runs of digits by their numeric value, a prefix first.
 */
export function goKeyCompare(a: string, b: string): number {
  const ar = [...a];
  const br = [...b];
  for (let i = 0; i < ar.length && i < br.length; i++) {
    if (ar[i] === br[i]) continue;
    const al = LETTER.test(ar[i]!);
    const bl = LETTER.test(br[i]!);
    if (al && bl) return ar[i]!.codePointAt(0)! - br[i]!.codePointAt(0)!;
    if (al || bl) return bl ? -1 : 1;
    return digitRunCompare(ar, br, i);
  }
  return ar.length - br.length;
}

function digitRunCompare(ar: string[], br: string[], i: number): number {
  let [an, bn] = [0n, 0n];
  // A zero after other digits is not a leading zero: the numbers compare as equal so far.
  if (ar[i] === "0" || br[i] === "0") {
    for (let j = i - 1; j >= 0 && DIGIT.test(ar[j]!); j--) {
      if (ar[j] !== "0") {
        [an, bn] = [1n, 1n];
        break;
      }
    }
  }
  let ai = i;
  for (; ai < ar.length && DIGIT.test(ar[ai]!); ai++) an = an * 10n + digitValue(ar[ai]!);
  let bi = i;
  for (; bi < br.length && DIGIT.test(br[bi]!); bi++) bn = bn * 10n + digitValue(br[bi]!);
  if (an !== bn) return an < bn ? -1 : 1;
  if (ai !== bi) return ai - bi;
  return ar[i]!.codePointAt(0)! - br[i]!.codePointAt(0)!;
}

/** Go's `rune - '0'`, which is the digit's value only for ASCII digits. */
const digitValue = (c: string) => BigInt(c.codePointAt(0)! - 0x30);
