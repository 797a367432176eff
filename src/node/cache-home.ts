import { homedir } from "node:os";
import { isAbsolute, join } from "node:path";

/**
 * The user's own kubeforge cache folder (XDG Base Directory): $XDG_CACHE_HOME/kubeforge, else
 * ~/.cache/kubeforge, the home being HOME, else the passwd entry's (`home`, which throws when
 * there is none).
 */
export function userCacheDir(env: NodeJS.ProcessEnv, home: () => string = homedir): string {
  const xdg = env.XDG_CACHE_HOME;
  if (xdg && isAbsolute(xdg)) return join(xdg, "kubeforge");
  const dir = env.HOME && isAbsolute(env.HOME) ? env.HOME : home();
  return join(dir, ".cache", "kubeforge");
}
