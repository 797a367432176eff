import { posix } from "node:path";

// Paths in a Cluster file name files on the runner (the machine kubeforge runs on): a leading
// "~/" is the runner's home, and a relative path is relative to the Cluster file's folder, so
// the file means the same whichever directory kubeforge is started from. No file is read here.

export interface PathContext {
  /** The Cluster file's folder; relative paths stay relative when it is not known. */
  baseDir?: string;
  /** The runner's home folder (HOME), for "~/". */
  home?: string;
}

/** The path on the runner, or the problem with it (a phrase). */
export function resolveRunnerPath(path: string, ctx: PathContext): string | { problem: string } {
  if (path.trim() === "") return { problem: "the path is empty" };
  if (path === "~" || path.startsWith("~/")) {
    if (!ctx.home)
      return { problem: `"~" cannot be expanded: the home folder (HOME) is not known` };
    return posix.join(ctx.home, path.slice(1));
  }
  if (path.startsWith("~")) {
    return {
      problem: `only "~/" (the runner's own home) is expanded, not another user's "~name/"`,
    };
  }
  if (posix.isAbsolute(path)) return posix.normalize(path);
  return ctx.baseDir ? posix.join(ctx.baseDir, path) : path;
}

/** True for an https:// URL that parses. */
export function isHttpsURL(text: string): boolean {
  return /^https:\/\//i.test(text) && URL.canParse(text);
}

/** True for text that is a URL of another scheme (http://, ftp://...). */
export function isOtherURL(text: string): boolean {
  return /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//.test(text) && !/^https:\/\//i.test(text);
}
