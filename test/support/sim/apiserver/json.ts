// SIMULATION (test double). Reading untyped JSON request bodies without surprises.

/** The value when it is a string (numbers and booleans printed), else `dflt`. */
export function str(v: unknown, dflt = ""): string {
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  return dflt;
}
