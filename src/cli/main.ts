#!/usr/bin/env node
import * as nodeModule from "node:module";
import { homedir } from "node:os";
import { isAbsolute, join } from "node:path";

// The kubeforge command's entry. Node compiles the bundle's 4 MB of code at every start (a
// tenth of a second, more on a busy runner); with its compile cache on the runs after the first
// reuse the compiled code. It must be on before the code loads: the command itself is imported
// after. (Not a named import: on a Node without it, the bundle's own check must get to say which
// Node kubeforge needs.)

/**
 * The user's own cache folder, $XDG_CACHE_HOME/kubeforge or ~/.cache/kubeforge, not Node's
 * default in the shared temporary folder: there another local user could leave compiled code
 * for a root kubeforge to run (yao-pkg/pkg#55 moved its cache out of /tmp for this reason).
 * NODE_COMPILE_CACHE, when set, is Node's own choice and wins; NODE_DISABLE_COMPILE_CACHE=1
 * turns the cache off.
 */
function compileCacheDir(env: NodeJS.ProcessEnv): string {
  const xdg = env.XDG_CACHE_HOME;
  if (xdg && isAbsolute(xdg)) return join(xdg, "kubeforge", "node-compile-cache");
  const home = env.HOME && isAbsolute(env.HOME) ? env.HOME : homedir();
  return join(home, ".cache", "kubeforge", "node-compile-cache");
}

nodeModule.enableCompileCache?.(compileCacheDir(process.env));
await import("./program.js");
