import { printable } from "./printable.js";

// One reporting interface, two implementations (DESIGN.md "Reporter"): the terminal one here,
// the GitHub one in src/action. stdout is kept for data a user may pipe (dry-run objects,
// `token generate`); every progress line goes to stderr. Both make every line they print inert
// (printable.ts): messages quote what nodes and servers said.

export interface Reporter {
  info(message: string): void;
  warn(message: string): void;
  /** Wraps one top-level phase: a log group on GitHub, nothing special on a terminal. */
  group<T>(title: string, fn: () => Promise<T>): Promise<T>;
  /** Registers a secret so no later output shows it (every line of a multi-line value). */
  mask(secret: string): void;
}

export interface TerminalReporterOptions {
  write?: (line: string) => void;
  /** Prefix for every line, e.g. the host name when several hosts log together. */
  prefix?: string;
}

/** Lines on stderr, with registered secrets replaced by "***", made inert (printable.ts). */
export class TerminalReporter implements Reporter {
  private readonly secrets = new Set<string>();
  private readonly write: (line: string) => void;
  private readonly prefix: string;

  constructor(opts: TerminalReporterOptions = {}) {
    this.write = opts.write ?? ((line) => process.stderr.write(`${line}\n`));
    this.prefix = opts.prefix ? `${opts.prefix}: ` : "";
  }

  private redact(message: string): string {
    let out = message;
    for (const s of this.secrets) out = out.split(s).join("***");
    return out;
  }

  info(message: string): void {
    this.write(printable(this.redact(`${this.prefix}${message}`)));
  }

  warn(message: string): void {
    // "[certs] msg" becomes "[certs] WARNING: msg"; kubeadm's own "[WARNING Name]: msg" lines
    // (preflight) already say what they are.
    const m = /^(\[[^\]]+\] )?(.*)$/s.exec(message)!;
    const text = /^\[?WARNING\b/.test(m[2]!) ? m[2]! : `WARNING: ${m[2]}`;
    this.write(printable(this.redact(`${this.prefix}${m[1] ?? ""}${text}`)));
  }

  group<T>(_title: string, fn: () => Promise<T>): Promise<T> {
    return fn();
  }

  mask(secret: string): void {
    for (const line of secret.split(/\r?\n/)) if (line.trim().length >= 4) this.secrets.add(line);
  }
}
