/** What `promise` rejected with; fails the test when it resolved instead. */
export async function rejectionOf<E = unknown>(promise: Promise<unknown>): Promise<E> {
  try {
    await promise;
  } catch (error) {
    return error as E;
  }
  throw new Error("expected a rejection");
}
