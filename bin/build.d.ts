// Types of bin/build.js, for the TypeScript that calls it (the test suite's global setup).
export declare const DIST: string;
export declare function sourceFingerprint(): string;
export declare function isBuildFresh(): boolean;
export declare function build(opts?: { log?: (line: string) => void }): void;
export declare function ensureBuilt(opts?: { log?: (line: string) => void }): void;
