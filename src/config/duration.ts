// Go's time.Duration text form, as kubeadm's API carries it (metav1.Duration: "24h0m0s",
// "4m0s"). Parsing follows time.ParseDuration; formatting follows Duration.String, so a value
// we write reads back in Go exactly and looks like what kubeadm prints.

const NANOS_PER_UNIT: Record<string, bigint> = {
  ns: 1n,
  us: 1_000n,
  µs: 1_000n, // U+00B5 micro sign
  μs: 1_000n, // U+03BC Greek mu
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
};

const MAX_INT64 = (1n << 63n) - 1n;

/**
 * Nanoseconds in a Go duration string ("1h30m", "1.5s", "-2m", "0"), or undefined when the
 * text is not one. Like time.ParseDuration: a unit is required except for "0", a leading
 * sign is allowed, fractions are allowed on every unit.
 */
export function tryParseGoDurationNanos(text: string): bigint | undefined {
  let rest = text;
  let negative = false;
  if (rest.startsWith("-") || rest.startsWith("+")) {
    negative = rest.startsWith("-");
    rest = rest.slice(1);
  }
  if (rest === "0") return 0n;
  if (rest === "") return undefined;
  const part = /^([0-9]*)(?:\.([0-9]*))?(ns|us|µs|μs|ms|s|m|h)/;
  let total = 0n;
  while (rest.length > 0) {
    const m = part.exec(rest);
    if (!m) return undefined;
    const whole = m[1] ?? "";
    const frac = m[2] ?? "";
    if (whole === "" && frac === "") return undefined; // "." or "h" alone
    const unit = NANOS_PER_UNIT[m[3]!]!;
    let value = BigInt(whole || "0") * unit;
    if (frac !== "") {
      // Go's leadingFraction + float arithmetic: digits past int64 are dropped, and the
      // fraction is scaled in float64 ("0.3333333333333333333h" is exactly 20m in Go).
      let f = 0n;
      let scale = 1;
      for (const digit of frac) {
        if (f > MAX_INT64 / 10n) continue;
        f = f * 10n + BigInt(digit);
        scale *= 10;
      }
      value += BigInt(Math.trunc(Number(f) * (Number(unit) / scale)));
    }
    total += value;
    if (total > MAX_INT64) return undefined; // Go: "invalid duration" (overflow)
    rest = rest.slice(m[0].length);
  }
  return negative ? -total : total;
}

/** Nanoseconds in a Go duration; throws naming `field` when the text is not one. */
export function parseGoDurationNanos(text: string, field = "duration"): bigint {
  const nanos = tryParseGoDurationNanos(text);
  if (nanos === undefined) {
    throw new Error(`${field}: "${text}" is not a valid duration (examples: "24h0m0s", "90s")`);
  }
  return nanos;
}

/** Milliseconds in a Go duration (fractions of a millisecond kept); throws naming `field`. */
export function parseGoDuration(text: string, field = "duration"): number {
  return Number(parseGoDurationNanos(text, field)) / 1e6;
}

/** True when `text` is a Go duration. */
export function isGoDuration(text: string): boolean {
  return tryParseGoDurationNanos(text) !== undefined;
}

function formatFraction(value: bigint, digits: number): string {
  // value < 10^digits; print it with trailing zeros removed, or "" when zero.
  if (value === 0n) return "";
  const text = value.toString().padStart(digits, "0").replace(/0+$/, "");
  return `.${text}`;
}

/** Duration.String of Go: "24h0m0s", "1m30.5s", "1.5ms", "0s". */
export function formatGoDurationNanos(nanos: bigint): string {
  if (nanos === 0n) return "0s";
  const sign = nanos < 0n ? "-" : "";
  const u = nanos < 0n ? -nanos : nanos;
  if (u < 1_000_000_000n) {
    // Below one second Go switches to the largest unit that keeps an integer part.
    if (u < 1_000n) return `${sign}${u}ns`;
    if (u < 1_000_000n) return `${sign}${u / 1_000n}${formatFraction(u % 1_000n, 3)}µs`;
    return `${sign}${u / 1_000_000n}${formatFraction(u % 1_000_000n, 6)}ms`;
  }
  const hours = u / 3_600_000_000_000n;
  const minutes = (u / 60_000_000_000n) % 60n;
  const seconds = (u / 1_000_000_000n) % 60n;
  const secondsText = `${seconds}${formatFraction(u % 1_000_000_000n, 9)}s`;
  if (hours > 0n) return `${sign}${hours}h${minutes}m${secondsText}`;
  if (minutes > 0n) return `${sign}${minutes}m${secondsText}`;
  return `${sign}${secondsText}`;
}

/** Duration.String of a number of milliseconds (sub-millisecond parts rounded to ns). */
export function formatGoDuration(ms: number): string {
  return formatGoDurationNanos(BigInt(Math.round(ms * 1e6)));
}

/** The canonical Go form of a duration string ("24h" → "24h0m0s"); throws naming `field`. */
export function normalizeGoDuration(text: string, field = "duration"): string {
  return formatGoDurationNanos(parseGoDurationNanos(text, field));
}
