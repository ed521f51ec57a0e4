from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("portal", "0003_cluster_sync_lease"),
    ]

    operations = [
        migrations.AddField(
            model_name="application",
            name="claim_token",
            field=models.CharField(blank=True, editable=False, max_length=32, verbose_name="approval in progress"),
        ),
        migrations.AddField(
            model_name="application",
            name="claimed_at",
            field=models.DateTimeField(blank=True, editable=False, null=True, verbose_name="approval started at"),
        ),
    ]
