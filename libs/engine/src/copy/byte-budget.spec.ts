import { ByteBudget } from './byte-budget';

describe('ByteBudget', () => {
  it('never admits more than its capacity and admits waiters in FIFO order', async () => {
    const budget = new ByteBudget(100);
    expect(budget.tryAcquire(60)).toBe(true);
    expect(budget.tryAcquire(50)).toBe(false);
    const order: string[] = [];
    const big = budget.acquire(90).then(() => order.push('big'));
    const small = budget.acquire(10).then(() => order.push('small'));
    // Fits, but a waiter is queued ahead of it: FIFO, no overtaking.
    expect(budget.tryAcquire(10)).toBe(false);
    await Promise.resolve();
    expect(order).toEqual([]);
    budget.release(60);
    await Promise.all([big, small]);
    expect(order).toEqual(['big', 'small']);
    expect(budget.held).toBe(100);
    expect(budget.peakHeld).toBe(100);
    budget.release(100);
    expect(budget.held).toBe(0);
  });

  it('admits a request larger than the capacity only when nothing else is held', async () => {
    const budget = new ByteBudget(100);
    expect(budget.tryAcquire(30)).toBe(true);
    let admitted = false;
    const huge = budget.acquire(500).then(() => (admitted = true));
    await Promise.resolve();
    expect(admitted).toBe(false);
    budget.release(30);
    await huge;
    expect(budget.held).toBe(500);
    expect(budget.tryAcquire(1)).toBe(false);
    budget.release(500);
    expect(budget.tryAcquire(1)).toBe(true);
  });

  it('an aborted waiter holds nothing and lets the requests behind it in', async () => {
    const budget = new ByteBudget(100);
    budget.tryAcquire(50);
    const controller = new AbortController();
    const big = budget.acquire(80, controller.signal);
    const small = budget.acquire(40);
    controller.abort(new Error('stop'));
    await expect(big).rejects.toThrow('stop');
    await small;
    expect(budget.held).toBe(90);
    expect(budget.waiting).toBe(0);
  });

  it('rejects releasing more than is held', () => {
    const budget = new ByteBudget(10);
    budget.tryAcquire(5);
    expect(() => budget.release(6)).toThrow(RangeError);
  });
});
