// Generated from the Rust types by napi-derive (node scripts/gen-native-dts.js).
// Do not edit. The package API is the Memory class of index.d.ts.

/**
 * A handle on one memory (an engine and a namespace). Use the `Memory` class of
 * the `rememberstack` package rather than this one.
 */
export declare class NativeMemory {
  /** An unopened handle. */
  constructor()
  /**
   * Open the memory: `input` is `{"path"?, "namespace"?, "config"?,
   * "require_postgres"?}` as JSON. Resolves to a frame with the namespace.
   */
  open(input: string): Promise<string>
  /**
   * Run a facade method (`ingest_text`, `combined_context`, …) with its JSON
   * input. Resolves to a frame with the method's result JSON.
   */
  call(method: string, input: string): Promise<string>
  /**
   * Make this unopened handle share `source`'s engine, reading and writing
   * `namespace` (`Memory::with_namespace`). Returns a frame with the namespace.
   */
  share(source: NativeMemory, namespace: string): string
  /**
   * Close the handle: later calls reject with `closed`; calls already running
   * finish. The store closes when the last of them is done. True if it was open.
   */
  close(): boolean
  /** The methods `call` answers. */
  static methods(): Array<string>
}
