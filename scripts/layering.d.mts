import type { Linter } from "eslint";

export const PURE: string[];
export const EFFECTS: string[];
export const EDGES: string[];
export const layering: Linter.Config[];
