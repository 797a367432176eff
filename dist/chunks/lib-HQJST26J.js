import { createRequire as __kubeforgeCreateRequire } from "node:module"; const require = __kubeforgeCreateRequire(import.meta.url); if (Number(process.versions.node.split(".")[0]) < 24) { process.stderr.write("kubeforge needs Node.js 24 or later; this is Node.js " + process.version + "\n"); process.exit(1); }
import{a}from"./chunk-ER5A2QYL.js";import"./chunk-NT4EBA2O.js";export default a();
