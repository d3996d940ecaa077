// Whether this instance's writes are failing for lack of space (a full disk, an I/O error), so
// that /readyz can say so (src/http/health-plugin.ts). Nothing probes the disk: the writes
// themselves report it (src/api/trpc.ts notes each outcome), and the verdict ends by itself
// STORAGE_FAULT_MEMORY_MS after the last failure, or at once when a write succeeds, so that an
// instance taken out of rotation is tried again and recovers when space returns.
import type { DatabaseFault } from './database-errors.js';

/** How long a storage fault keeps /readyz at 503 after it was last seen (Retry-After says the same). */
const STORAGE_FAULT_MEMORY_MS = 30_000;

export class StorageHealth {
  private lastFaultAt: number | null = null;

  constructor(private readonly now: () => number = Date.now) {}

  /** A request failed with `fault`: only storage faults change the verdict. */
  noteFault(fault: DatabaseFault | null): void {
    if (fault === 'storage') this.lastFaultAt = this.now();
  }

  /** A write was committed: there is room again. */
  noteWriteCommitted(): void {
    this.lastFaultAt = null;
  }

  /** True while writes are failing for lack of space (see above). */
  writesFailing(): boolean {
    return this.lastFaultAt !== null && this.now() - this.lastFaultAt < STORAGE_FAULT_MEMORY_MS;
  }
}
