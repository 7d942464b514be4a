/**
 * Domain types of the benchmark, in its own words: pset, paper, snippet, task, sample,
 * completion, verdict, run. Everything here is plain data so that it crosses process,
 * Lambda and container boundaries unchanged.
 */

/** One entry of papers.yaml after normalisation (SPEC 2). */
export interface PaperMeta {
  /** Folder name of the paper inside the pset. */
  id: string;
  title?: string;
  venue?: string;
  github_url?: string;
  arxiv_abs?: string;
  /** Calendar dates as `YYYY-MM-DD` strings. */
  arxiv_date?: string;
  arxiv_v1_date?: string;
  first_commit_date?: string;
  last_commit_date?: string;
  /** Files (relative to the paper folder, trimmed) that hold snippets. */
  annotated_file_paths: string[];
  /** Files shown to the model in full. */
  context_file_paths: string[];
  /** Every other key of the entry, kept as metadata (values as found). */
  extra: Record<string, unknown>;
}

/** A masked block of code: one task per snippet (SPEC 3). */
export interface Snippet {
  paper: string;
  /** Annotated file, relative to the paper folder. */
  file: string;
  name: string;
  /** 1-based line number of the open marker. */
  openLine: number;
  /** 1-based line number of the close marker. */
  closeLine: number;
  /** Leading whitespace of the open marker line. */
  markerIndent: string;
  /** Smallest count of leading spaces/tabs over the non-blank body lines (SPEC 5). */
  bodyIndent: number;
  /** Lines strictly between the two markers, nested markers included. */
  body: string[];
  /** Lines of code of the body (SPEC 4): the task's weight. */
  loc: number;
  /** Name of the innermost enclosing snippet of the same file, or null. */
  parent: string | null;
}

/** A source file of a paper, split into lines (no line terminators). */
export interface SourceFile {
  /** Path relative to the paper folder. */
  path: string;
  lines: string[];
  /** Whether the original text ended with a newline. */
  finalNewline: boolean;
}

export interface Paper {
  meta: PaperMeta;
  /**
   * Content digest of the paper: its papers.yaml entry and every file of its folder (hex
   * sha256). Task ids use it, so they stay the same when other papers change or are left
   * out of a run.
   */
  digest: string;
  /** Absolute path of the paper folder. */
  dir: string;
  /** File name of the paper text inside `dir` (`paper2code_paper.tex` or `.md`). */
  paperTextFile: string;
  annotatedFiles: SourceFile[];
  contextFiles: SourceFile[];
  snippets: Snippet[];
}

export interface Pset {
  /** Absolute path of the pset root. */
  root: string;
  /** Digest of the selected papers' digests (hex sha256). */
  digest: string;
  papers: Paper[];
}

/** A problem found in a pset, reported as `path:line: message`. */
export interface PsetProblem {
  /** Path relative to the current directory or absolute, as given to the reader. */
  path: string;
  /** 1-based line, or 0 when the problem is about the file as a whole. */
  line: number;
  message: string;
  /** Set when the problem is a paper asked for (`--papers`) that papers.yaml does not list: the asker's mistake, not the pset's. */
  unknownPaper?: { id: string; known: string[] };
}

/** The listing row of a task, as printed by `rcb tasks --json`. */
export interface TaskListing {
  paper: string;
  file: string;
  snippet: string;
  loc: number;
  parent: string | null;
}

/** Failure classes of SPEC 10. */
export const FAILURE_CLASSES = [
  'syntax',
  'name',
  'type',
  'attribute',
  'index_key',
  'import',
  'functional',
  'runtime',
  'timeout',
  'resource',
  'no_code',
  'generation_error',
  'integrity',
  /** Imported results that say only that a task failed. */
  'unknown',
] as const;
export type FailureClass = (typeof FAILURE_CLASSES)[number];

/** Which pass rule a score uses (SPEC 7). */
export type Judge = 'official' | 'strict';

/** Token usage of one model call. */
export interface TokenUsage {
  inputTokens: number;
  cachedInputTokens: number;
  outputTokens: number;
  reasoningTokens: number;
}

/** A log stream kept within a size cap: head and tail with the cut marked. */
export interface CappedLog {
  text: string;
  /** Bytes the process wrote to the stream in all. */
  totalBytes: number;
  /** True when the middle was cut out of `text`. */
  truncated: boolean;
}
