/** Bad launch options: main prints `message` as one stderr line and exits with this code. */
export class LaunchConfigError extends Error {
  static readonly EXIT_CODE = 2;

  constructor(message: string) {
    super(message);
    this.name = 'LaunchConfigError';
  }
}
