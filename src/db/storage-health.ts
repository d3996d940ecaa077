// Whether writes are failing for lack of space, for /readyz. Writes report it; the verdict ends after
// STORAGE_FAULT_MEMORY_MS or at the next committed write. @see docs/operations.md "Health checks"
import type { DatabaseFault } from './database-errors.js';

const STORAGE_FAULT_MEMORY_MS = 30_000;

export class StorageHealth {
  private lastFaultAt: number | null = null;

  constructor(private readonly now: () => number = Date.now) {}

  noteFault(fault: DatabaseFault | null): void {
    if (fault === 'storage') this.lastFaultAt = this.now();
  }

  noteWriteCommitted(): void {
    this.lastFaultAt = null;
  }

  writesFailing(): boolean {
    return this.lastFaultAt !== null && this.now() - this.lastFaultAt < STORAGE_FAULT_MEMORY_MS;
  }
}
