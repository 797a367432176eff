#!/usr/bin/env node
import * as nodeModule from "node:module";

// The kubeforge command's entry. Node compiles the bundle's 4 MB of code at every start (a
// tenth of a second, more on a busy runner); with its compile cache on (in the system's temporary
// folder, or NODE_COMPILE_CACHE; NODE_DISABLE_COMPILE_CACHE=1 turns it off) the runs after the
// first in a job reuse the compiled code. It must be on before the code loads: the command
// itself is imported after. (Not a named import: on a Node without it, the bundle's own check
// must get to say which Node kubeforge needs.)
nodeModule.enableCompileCache?.();
await import("./program.js");
