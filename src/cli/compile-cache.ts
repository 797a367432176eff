import { isAbsolute, join } from "node:path";
import { userCacheDir } from "../node/cache-home.js";

/**
 * Where the kubeforge command keeps Node's compile cache: the user's own cache folder
 * (userCacheDir), not Node's default in the shared temporary folder, where another local user
 * could leave compiled code for a root kubeforge to run (yao-pkg/pkg#55 moved its cache out of
 * /tmp for this reason). Undefined for a user without a home (no passwd entry, no HOME): then
 * no cache. NODE_COMPILE_CACHE, when set, is Node's own choice and wins;
 * NODE_DISABLE_COMPILE_CACHE=1 turns the cache off.
 */
export function compileCacheDir(env: NodeJS.ProcessEnv, home?: () => string): string | undefined {
  let dir: string;
  try {
    dir = userCacheDir(env, home);
  } catch {
    return undefined;
  }
  return isAbsolute(dir) ? join(dir, "node-compile-cache") : undefined;
}
