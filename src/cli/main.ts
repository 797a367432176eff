#!/usr/bin/env node
import * as nodeModule from "node:module";
import { compileCacheDir } from "./compile-cache.js";

// The kubeforge command's entry. Node compiles the bundle's 4 MB of code at every start (a
// tenth of a second, more on a busy runner); with its compile cache on (compile-cache.ts says
// where) the runs after the first reuse the compiled code. It must be on before the code loads:
// the command itself is imported after. (Not a named import: on a Node without it, the bundle's
// own check must get to say which Node kubeforge needs.)
const cacheDir = compileCacheDir(process.env);
if (cacheDir !== undefined) nodeModule.enableCompileCache?.(cacheDir);
await import("./program.js");
