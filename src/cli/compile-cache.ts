import { homedir } from "node:os";
import { isAbsolute, join } from "node:path";

/**
 * Where the kubeforge command keeps Node's compile cache: the user's own cache folder,
 * $XDG_CACHE_HOME/kubeforge or ~/.cache/kubeforge, not Node's default in the shared temporary
 * folder, where another local user could leave compiled code for a root kubeforge to run
 * (yao-pkg/pkg#55 moved its cache out of /tmp for this reason). Undefined for a user without a
 * home (no passwd entry, no HOME): then no cache. NODE_COMPILE_CACHE, when set, is Node's own
 * choice and wins; NODE_DISABLE_COMPILE_CACHE=1 turns the cache off.
 */
export function compileCacheDir(
  env: NodeJS.ProcessEnv,
  home: () => string = homedir,
): string | undefined {
  const xdg = env.XDG_CACHE_HOME;
  if (xdg && isAbsolute(xdg)) return join(xdg, "kubeforge", "node-compile-cache");
  let dir = env.HOME;
  if (!dir || !isAbsolute(dir)) {
    try {
      dir = home();
    } catch {
      return undefined;
    }
  }
  return isAbsolute(dir) ? join(dir, ".cache", "kubeforge", "node-compile-cache") : undefined;
}
