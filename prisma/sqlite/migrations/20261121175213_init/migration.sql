-- CreateTable
CREATE TABLE "pets" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "name" TEXT NOT NULL,
    "category_id" BIGINT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'available'
);

-- CreateIndex
CREATE INDEX "pets_status_id_idx" ON "pets"("status", "id");
