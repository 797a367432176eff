import { describe, expect, it } from "vitest";
import {
  formatGoDuration,
  formatGoDurationNanos,
  normalizeGoDuration,
  parseGoDuration,
  tryParseGoDurationNanos,
} from "../../../src/config/duration.js";

const S = 1_000_000_000n;
const MS = 1_000_000n;

describe("Go duration parsing (known answers from Go's time/time_test.go parseDurationTests)", () => {
  it.each<[string, bigint]>([
    ["0", 0n],
    ["5s", 5n * S],
    ["30s", 30n * S],
    ["1478s", 1478n * S],
    ["-5s", -5n * S],
    ["+5s", 5n * S],
    ["-0", 0n],
    ["+0", 0n],
    ["5.0s", 5n * S],
    ["5.6s", 5n * S + 600n * MS],
    ["5.s", 5n * S],
    [".5s", 500n * MS],
    ["1.004s", S + 4n * MS],
    ["100.00100s", 100n * S + MS],
    ["10ns", 10n],
    ["11us", 11_000n],
    ["12µs", 12_000n],
    ["12μs", 12_000n],
    ["13ms", 13n * MS],
    ["15m", 15n * 60n * S],
    ["16h", 16n * 3600n * S],
    ["3h30m", (3n * 3600n + 30n * 60n) * S],
    ["10.5s4m", 4n * 60n * S + 10n * S + 500n * MS],
    ["-2m3.4s", -(2n * 60n * S + 3n * S + 400n * MS)],
    ["1h2m3s4ms5us6ns", 3600n * S + 2n * 60n * S + 3n * S + 4n * MS + 5_000n + 6n],
    ["39h9m14.425s", (39n * 3600n + 9n * 60n + 14n) * S + 425n * MS],
    ["52763797000ns", 52_763_797_000n],
    ["0.3333333333333333333h", 20n * 60n * S],
  ])("%s", (text, nanos) => {
    expect(tryParseGoDurationNanos(text)).toBe(nanos);
  });

  it.each(["", "3", "-", "s", ".", "-.", ".s", "+.s", "1d", "1h 30m", "3000000h"])(
    "refuses %j",
    (text) => {
      expect(tryParseGoDurationNanos(text)).toBeUndefined();
    },
  );

  it("names the field in errors and converts to milliseconds", () => {
    expect(parseGoDuration("1m30s")).toBe(90_000);
    expect(() => parseGoDuration("24", "bootstrapTokens[0].ttl")).toThrow(
      'bootstrapTokens[0].ttl: "24" is not a valid duration',
    );
  });
});

describe("Go Duration.String (known answers from Go's durationTests)", () => {
  it.each<[bigint, string]>([
    [0n, "0s"],
    [1n, "1ns"],
    [1_100n, "1.1µs"],
    [2_200_000n, "2.2ms"],
    [3_300_000_000n, "3.3s"],
    [4n * 60n * S + 5n * S, "4m5s"],
    [4n * 60n * S + 5n * S + MS, "4m5.001s"],
    [5n * 3600n * S + 6n * 60n * S + 7n * S + MS, "5h6m7.001s"],
    [8n * 60n * S + 1n, "8m0.000000001s"],
    [(1n << 63n) - 1n, "2562047h47m16.854775807s"],
    [-(1n << 63n), "-2562047h47m16.854775808s"],
  ])("%s ns", (nanos, text) => {
    expect(formatGoDurationNanos(nanos)).toBe(text);
  });

  it.each([
    ["24h", "24h0m0s"],
    ["8760h", "8760h0m0s"],
    ["87600h", "87600h0m0s"],
    ["4m", "4m0s"],
    ["0", "0s"],
    ["90s", "1m30s"],
  ])("normalizes %s to %s as kubeadm prints it", (text, canonical) => {
    expect(normalizeGoDuration(text)).toBe(canonical);
  });

  it("formats milliseconds", () => {
    expect(formatGoDuration(240_000)).toBe("4m0s");
    expect(formatGoDuration(1.5)).toBe("1.5ms");
  });
});
