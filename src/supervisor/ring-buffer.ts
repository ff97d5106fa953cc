/** The last `capacity` lines of a child's output, in constant memory. */
export class RingBuffer<T> {
  private readonly items: (T | undefined)[];
  private next = 0;
  private count = 0;
  constructor(readonly capacity: number) {
    this.items = new Array<T | undefined>(capacity);
  }
  push(item: T): void {
    this.items[this.next] = item;
    this.next = (this.next + 1) % this.capacity;
    this.count = Math.min(this.count + 1, this.capacity);
  }
  /** The last `n` items (all by default), oldest first. */
  last(n = this.count): T[] {
    const take = Math.max(0, Math.min(n, this.count));
    const out: T[] = [];
    for (let i = take; i > 0; i--) {
      const item = this.items[(this.next - i + this.capacity) % this.capacity];
      if (item !== undefined) out.push(item);
    }
    return out;
  }
  clear(): void {
    this.items.fill(undefined);
    this.next = 0;
    this.count = 0;
  }
  get size(): number {
    return this.count;
  }
}
