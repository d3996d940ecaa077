// The bench's summaries of its rounds: the median, and the min–max spread printed beside it.

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

export const spread = (values: number[], digits: number) => `${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)}`;

/** A table cell: the median, then the spread in brackets. */
export const medianCell = (values: number[], digits: number) => `${median(values).toFixed(digits)} (${spread(values, digits)})`;

/** A ratio's cell: its median in bold, then the spread. */
export const ratioCell = (values: number[]) => `**${median(values).toFixed(2)}** (${spread(values, 2)})`;
