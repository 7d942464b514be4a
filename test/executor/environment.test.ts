import { isSecretName, sandboxEnvironment } from '../../adapters/executor/environment';

describe('sandboxEnvironment', () => {
  const parentEnv = {
    PATH: '/root/bin:/usr/bin',
    HOME: '/root',
    OPENAI_API_KEY: 'sk-1',
    GITHUB_TOKEN: 'ghp-1',
    AWS_REGION: 'eu-west-1',
    MY_SECRET_THING: 's',
    CUDA_VISIBLE_DEVICES: '0',
    OMP_NUM_THREADS: '4',
  };

  it('passes nothing of the parent but the fixed defaults when nothing is allowed', () => {
    const env = sandboxEnvironment({ parentEnv, interpreterDir: '/opt/py/bin' });

    expect(env).toEqual({
      PATH: '/opt/py/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
      HOME: '/tmp',
      LANG: 'C.UTF-8',
      LC_ALL: 'C.UTF-8',
      PYTHONUNBUFFERED: '1',
      PYTHONDONTWRITEBYTECODE: '1',
      OMP_NUM_THREADS: '1',
      MKL_NUM_THREADS: '1',
      OPENBLAS_NUM_THREADS: '1',
      BLIS_NUM_THREADS: '1',
      GOTO_NUM_THREADS: '1',
      VECLIB_MAXIMUM_THREADS: '1',
      NUMEXPR_NUM_THREADS: '1',
      MPLBACKEND: 'Agg',
    });
  });

  it('passes allowed names from the parent, and refuses credential-like ones with a warning', () => {
    const warnings: string[] = [];

    const env = sandboxEnvironment({
      parentEnv,
      allow: ['CUDA_VISIBLE_DEVICES', 'OMP_NUM_THREADS', 'OPENAI_API_KEY', 'GITHUB_TOKEN', 'AWS_REGION', 'MY_SECRET_THING', 'NOT_SET'],
      warn: (m) => void warnings.push(m),
    });

    expect(env.CUDA_VISIBLE_DEVICES).toBe('0');
    expect(env.OMP_NUM_THREADS).toBe('4');
    expect(env).not.toHaveProperty('NOT_SET');
    for (const name of ['OPENAI_API_KEY', 'GITHUB_TOKEN', 'AWS_REGION', 'MY_SECRET_THING']) {
      expect(env).not.toHaveProperty(name);
      expect(warnings.some((w) => w.includes(name))).toBe(true);
    }
  });

  it('treats *KEY*, *TOKEN*, *SECRET* and AWS_* as secret in any case', () => {
    expect(['api_key', 'HF_TOKEN', 'client_secret', 'aws_profile', 'AWS_SESSION_TOKEN'].every(isSecretName)).toBe(true);
    expect(['PATH', 'CUDA_VISIBLE_DEVICES', 'PYTHONPATH'].some(isSecretName)).toBe(false);
  });
});
