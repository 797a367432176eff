import { displayCommand } from "./command-limits.js";
import type { Host } from "./host.js";

// A Host that says what it does, for debug logs: each command's argv before it runs, and how a
// command that failed ended; each file written or removed by path and mode. Never what travels
// over stdin or into a file (that is where secrets go: DESIGN.md "Host"), only its size.

/** The same host (same prototype: `instanceof` still holds), each operation told to `trace`. */
export function tracedHost(host: Host, trace: (line: string) => void): Host {
  const exec: Host["exec"] = async (argv, opts) => {
    const notes = [
      ...(opts?.sudo ? ["as root"] : []),
      ...(opts?.stdin !== undefined ? [`${Buffer.byteLength(opts.stdin)} bytes on stdin`] : []),
    ];
    trace(`$ ${displayCommand(argv)}${notes.length > 0 ? ` (${notes.join(", ")})` : ""}`);
    const started = performance.now();
    try {
      const result = await host.exec(argv, opts);
      if (result.code !== 0) {
        trace(
          `exit ${result.code} after ${Math.round(performance.now() - started)} ms: ${argv[0]}`,
        );
      }
      return result;
    } catch (e) {
      trace(
        `failed after ${Math.round(performance.now() - started)} ms: ${argv[0]}: ${e instanceof Error ? e.message : String(e)}`,
      );
      throw e;
    }
  };
  const writeFile: Host["writeFile"] = (path, data, mode) => {
    trace(
      `write ${path} (${Buffer.byteLength(data)} bytes, mode ${mode.toString(8).padStart(4, "0")})`,
    );
    return host.writeFile(path, data, mode);
  };
  const remove: Host["remove"] = (path, opts) => {
    trace(`remove ${path}${opts?.recursive ? " (recursive)" : ""}`);
    return host.remove(path, opts);
  };
  const own: Partial<Host> = { exec, writeFile, remove };
  return new Proxy(host, {
    get(target, prop) {
      if (prop in own) return own[prop as keyof typeof own];
      const value: unknown = Reflect.get(target, prop, target);
      // Methods run on the host itself (its private state is on it, not on the proxy).
      return typeof value === "function"
        ? (value as (...a: unknown[]) => unknown).bind(target)
        : value;
    },
  });
}
