/**
 * An input the user gave is wrong: a flag, a field of a file, a file that cannot be read. The
 * message names the flag, or the file (and line or field); the command line prints it in one
 * line with exit code 1 (or `exitCode`), never a stack trace, which is kept for rcb's own bugs
 * (docs/running-locally.md, "Damaged run directories and exit codes").
 */
export class InputError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
    this.name = 'InputError';
  }
}

/** File-system error codes that say something about a path the user gave, not about rcb. */
const PATH_ERRORS: Record<string, string> = {
  ENOENT: 'no such file or folder',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EISDIR: 'is a folder, not a file',
  ENOTDIR: 'a part of the path is not a folder',
  EEXIST: 'already exists',
  ELOOP: 'too many symlinks',
  ENAMETOOLONG: 'name too long',
  ENOSPC: 'no space left on the device',
  EROFS: 'read-only file system',
  EMFILE: 'too many open files',
};

/** A file-system error on a path as an InputError naming the path, or null for anything else. */
export function pathInputError(e: unknown): InputError | null {
  const err = e as NodeJS.ErrnoException & { dest?: string };
  if (!err || typeof err !== 'object' || typeof err.code !== 'string' || !(err.code in PATH_ERRORS)) return null;
  const where = err.dest ? `${err.path} -> ${err.dest}` : err.path;
  if (!where) return null;
  return new InputError(`${where}: ${PATH_ERRORS[err.code]} (${err.syscall ? `${err.syscall}, ` : ''}${err.code})`);
}
