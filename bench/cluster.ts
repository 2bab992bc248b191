/**
 * The cluster scenario's instances: a Redis and a Postgres on free ports in temp dirs (started as
 * the tests start them, from Debian's packages), and CLUSTER_SIZE gateway instances on them with the
 * bench's config, behind one target whose load is spread over the three.
 */
import { join } from 'node:path'
import { temporaryBuild } from '../scripts/build'
import { postgresMissing, redisMissing, startPostgres, startRedis } from '../test/support/servers'
import { freePort, ROOT, rssMb, start, waitForHealthy } from './processes'

export const CLUSTER_SIZE = 3

export interface Cluster {
  /** The bench's target for the three instances (`urls`: one per instance). */
  target: { name: string; url: string; urls: string[]; headers: Record<string, string>; model: string }
  pids: number[]
  idleRssMb: number[]
  dispose(): Promise<void>
}

/** Why the cluster cannot run here (skipped, or Redis or Postgres missing); null when it can. */
export const clusterMissing = (skipped: boolean): string | null => (skipped ? 'skipped (--skip-cluster)' : (redisMissing() ?? postgresMissing()))

/** Starts the instances on `configPath`, each with `env` added (the other kinds' credentials), their key made on Postgres. */
export async function startCluster(configPath: string, env: Record<string, string>, work: string): Promise<Cluster> {
  const [redis, postgres] = await Promise.all([startRedis(), startPostgres()])
  const clusterEnv = {
    DATABASE_URL: await postgres.createDatabase(),
    REDIS_URL: redis.url,
    GATEWAY_CONFIG: configPath,
    GATEWAY_DB: join(work, 'cluster', 'unused.sqlite'),
    ...env,
  }
  const made = Bun.spawnSync(['bun', temporaryBuild('cli'), 'keys', 'create', '--name', 'bench', '--tier', 'bench', '--json'], {
    cwd: ROOT,
    env: { ...process.env, ...clusterEnv },
  })
  const key = (JSON.parse(made.stdout.toString()) as { key: string }).key
  const instances = await Promise.all(
    Array.from({ length: CLUSTER_SIZE }, async () => {
      const port = await freePort()
      const child = start(['bun', temporaryBuild('main')], { ...clusterEnv, PORT: String(port) })
      await waitForHealthy(`http://127.0.0.1:${port}/health`)
      return { child, url: `http://127.0.0.1:${port}` }
    }),
  )
  return {
    target: {
      name: `cluster x${CLUSTER_SIZE}`,
      url: instances[0]!.url,
      urls: instances.map((i) => i.url),
      headers: { Authorization: `Bearer ${key}` },
      model: 'bench/fast',
    },
    pids: instances.map((i) => i.child.pid),
    idleRssMb: instances.map((i) => rssMb(i.child.pid)),
    async dispose() {
      for (const instance of instances) instance.child.kill('SIGTERM')
      await Promise.all(instances.map((i) => i.child.exited))
      await Promise.all([redis.dispose(), postgres.dispose()])
    },
  }
}
