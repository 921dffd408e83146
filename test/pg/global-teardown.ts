/** Stops the cluster global-setup.ts started (a server the caller named is left alone). */
export default function teardown(): void {
  globalThis.dcmPgCluster?.stop();
}
