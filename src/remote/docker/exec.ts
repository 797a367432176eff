import type { Duplex } from "node:stream";
import { PassThrough, Readable } from "node:stream";
import {
  KILL_AFTER_SECONDS,
  TIMED_OUT_CODE,
  cancelledError,
  displayCommand,
  endableAsRoot,
} from "../command-limits.js";
import { cancellable } from "../interruption.js";
import { ProcessGroupReport, reportingProcessGroup } from "../ssh/process-group.js";
import { shellJoin } from "../ssh/quote.js";
import type { RawResult } from "../ssh/shell-files.js";
import type { DockerEngine } from "./engine.js";

// A command in a node container: an exec attached over the engine's upgraded connection. The
// engine has no call that ends an exec, so kubeforge ends it as it ends a command of a root
// SSH login (ssh/process-group.ts): the command runs under coreutils `timeout` (its own process
// group; TERM passed on, KILL 5 s later) and reports its process group first; a time limit or
// a cancel sends TERM to that group from a second exec, and KILL if it is still there.

export interface ContainerExecOptions {
  /** Bytes, or a stream piped in whole (an image archive). */
  stdin?: string | Buffer | Readable;
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** What a cancelled or timed-out command's group is sent, from a second exec. */
function killGroup(engine: DockerEngine, container: string, pgid: number, signal: string) {
  return runAttached(engine, container, ["sh", "-c", `kill -${signal} -${pgid}`]).catch(
    () => undefined,
  );
}

/** One attached exec to its end: raw stdout, stderr, exit code. */
async function runAttached(
  engine: DockerEngine,
  container: string,
  argv: string[],
  stdin?: Buffer | Readable,
  onStream?: (stream: Duplex, stderr: PassThrough) => void,
): Promise<RawResult> {
  const id = await engine.createExec(container, argv, stdin !== undefined);
  const stream = await engine.startExec(id, stdin !== undefined);
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  stdout.on("data", (b: Buffer) => out.push(b));
  stderr.on("data", (b: Buffer) => err.push(b));
  engine.demux(stream, stdout, stderr);
  onStream?.(stream, stderr);
  const ended = new Promise<void>((resolve) => {
    stream.once("end", resolve);
    stream.once("close", resolve);
    stream.once("error", () => resolve());
  });
  if (stdin instanceof Readable) {
    stdin.on("error", (e) => stream.destroy(e));
    stdin.pipe(stream);
  } else if (stdin !== undefined) stream.end(stdin);
  await ended;
  let info = await engine.inspectExec(id);
  // The stream can end a moment before the engine records the exit.
  for (let i = 0; info.Running && i < 50; i++) {
    await new Promise((r) => setTimeout(r, 20));
    info = await engine.inspectExec(id);
  }
  return {
    code: info.ExitCode ?? 255,
    stdout: Buffer.concat(out),
    stderr: Buffer.concat(err).toString(),
  };
}

/**
 * Runs argv as root in the container (a container's commands are root already). A non-zero exit
 * is a result; a time limit reached gives TIMED_OUT_CODE; a cancel rejects once the command is
 * gone (or after KILL_AFTER_SECONDS + 1 at the latest).
 */
export async function containerExec(
  engine: DockerEngine,
  container: string,
  label: string,
  argv: string[],
  opts: ContainerExecOptions = {},
): Promise<RawResult> {
  const display = displayCommand(argv);
  const signal = cancellable(opts.signal);
  if (signal.aborted) throw cancelledError(label, display, signal);
  const wrapped = [
    "sh",
    "-c",
    reportingProcessGroup(shellJoin(endableAsRoot(argv, opts.timeoutMs))),
  ];
  const group = new ProcessGroupReport();
  let timedOut = false;
  let aborted = false;
  let ended = false;
  let signalled = false;
  const end = () => {
    const pgid = group.pgid;
    if (pgid === undefined || ended || signalled) return;
    signalled = true;
    void killGroup(engine, container, pgid, "TERM");
    const kill = setTimeout(() => {
      if (!ended) void killGroup(engine, container, pgid, "KILL");
    }, KILL_AFTER_SECONDS * 1000);
    kill.unref();
  };
  const timer =
    opts.timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          timedOut = true;
          end();
        }, opts.timeoutMs);
  const onAbort = () => {
    aborted = true;
    end();
  };
  signal.addEventListener("abort", onAbort, { once: true });
  const stdin =
    opts.stdin === undefined || opts.stdin instanceof Readable
      ? opts.stdin
      : Buffer.from(opts.stdin);
  const ownStderr: Buffer[] = [];
  const run = runAttached(engine, container, wrapped, stdin, (_stream, stderr) => {
    // The report line comes first; a cancel that came before it is carried out once it is read.
    stderr.on("data", (b: Buffer) => {
      ownStderr.push(group.feed(b));
      if (aborted || timedOut) end();
    });
  });
  let giveUp: NodeJS.Timeout | undefined;
  const cancelled = new Promise<never>((_, reject) => {
    signal.addEventListener(
      "abort",
      () => {
        giveUp = setTimeout(
          () => reject(cancelledError(label, display, signal)),
          (KILL_AFTER_SECONDS + 1) * 1000,
        );
        giveUp.unref();
      },
      { once: true },
    );
  });
  try {
    const r = await Promise.race([run, cancelled]);
    ended = true;
    if (aborted) throw cancelledError(label, display, signal);
    const stderr = Buffer.concat([...ownStderr, group.rest()]).toString();
    if (timedOut || (r.code === TIMED_OUT_CODE && opts.timeoutMs !== undefined)) {
      return {
        code: TIMED_OUT_CODE,
        stdout: r.stdout,
        stderr: `${stderr}timed out after ${opts.timeoutMs} ms`,
      };
    }
    return { ...r, stderr };
  } finally {
    ended = true;
    clearTimeout(timer);
    clearTimeout(giveUp);
    signal.removeEventListener("abort", onAbort);
  }
}
