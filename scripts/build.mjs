import { buildDist } from "./dist.mjs";

await buildDist(process.argv[2] ?? "dist");
